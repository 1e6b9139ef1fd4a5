/**
 * The cost bounds of traffic policies. Tenants send policies with their tunnels and they run on the shared
 * edge, whose synchronous code nothing can preempt, so every bound is static: checked when a policy is
 * compiled, before any of it runs. Operator policies (policies/ files) and tenant policies get the same
 * bounds, except that an operator document may be larger. docs/security.md ("The cost of traffic policies") says why
 * each number is what it is.
 */

/** Serialized (JSON) size of one tenant policy document. */
export const MAX_POLICY_BYTES = 16 * 1024;
/** Serialized (JSON) size of one operator policy document: room for custom-response pages. */
export const MAX_OPERATOR_POLICY_BYTES = 2 * 1024 * 1024;
/** Nesting of maps and lists in a policy document; real policies need 6 (inbound[0].actions[0].config.headers). */
export const MAX_POLICY_DEPTH = 12;
/** Entries per phase (inbound, outbound). */
export const MAX_ENTRIES_PER_PHASE = 64;
/** Expressions of one entry. */
export const MAX_EXPRESSIONS_PER_ENTRY = 16;
/** Actions of one entry. */
export const MAX_ACTIONS_PER_ENTRY = 16;

/** Characters of one CEL expression. */
export const MAX_EXPRESSION_LENGTH = 1024;
/** Characters of all CEL expressions of one policy together: parsing costs time per character (docs/security.md). */
export const MAX_POLICY_EXPRESSION_CHARS = 4096;
/** Nesting of (), [] and {} in an expression, checked before parsing (the parser recurses on them). */
export const MAX_EXPRESSION_NESTING = 32;
/** Nodes of a parsed expression, macros expanded; also bounds the depth every later walk recurses to. */
export const MAX_EXPRESSION_NODES = 256;
/** Comprehensions (all, exists, exists_one, map, filter) inside another's body. */
export const MAX_COMPREHENSION_NESTING = 1;
/** Calls that can return something longer than their inputs (`+` on strings or lists, join, format). */
export const MAX_GROWING_CALLS = 8;
/** Characters of the separator of join() and of the format string of format(). */
export const MAX_GROWTH_LITERAL = 16;
/** Characters of a matches() pattern. */
export const MAX_REGEX_LENGTH = 256;
/** Instructions of a compiled matches() pattern; matching costs up to (text length × instructions). */
export const MAX_REGEX_INSTRUCTIONS = 500;
/** Largest count in a counted repetition (`{n}`, `{n,m}`) of a matches() pattern, checked before compiling it. */
export const MAX_REGEX_REPEAT = 100;
/** DFA states a compiled pattern may cache (RE2JS's default, 10,000, lets one pattern hold tens of MB). */
export const MAX_REGEX_DFA_STATES = 64;
/** matches() calls of one policy (each pattern is compiled and kept with the policy). */
export const MAX_PATTERNS_PER_POLICY = 16;
