/**
 * The bounds of one policy simulation: what a caller (a tenant through the management API, a page through the
 * agent API) may ask the engine to run. The policy itself has the bounds of any policy (src/policy/limits.ts) and
 * each request the CEL and regex budgets of a live request; these bound the rest. docs/security.md gives the
 * numbers and why.
 */

/** Requests of one simulation, run in order. */
export const MAX_SIMULATED_REQUESTS = 1000;
/** Characters of the policy text (YAML or JSON) before it is parsed; the parsed document then has the policy bounds. */
export const MAX_SIMULATED_POLICY_CHARS = 256 * 1024;
/**
 * Levels the policy text may nest before it is parsed ([ and { outside quotes, plus the `-`, `?` and `:` that
 * open levels on one line). A valid policy nests at most 12 (the policy depth bound) plus a few per line; the
 * YAML parser recurses per level and overflows the stack in the thousands (text-nesting.ts).
 */
export const MAX_SIMULATED_POLICY_NESTING = 64;
/** Header fields of one simulated request, and of its response. */
export const MAX_SIMULATED_HEADERS = 100;
/** Characters of one request's header names and values together, and of its response's (Cloudflare's own request limit is 32 KB). */
export const MAX_SIMULATED_HEADER_CHARS = 32 * 1024;
/** Characters of one request's URL (Cloudflare refuses longer ones with 414). */
export const MAX_SIMULATED_URL_CHARS = 16 * 1024;
/** Characters of a client address (an IPv6 address with a zone is at most 45 plus the zone). */
export const MAX_SIMULATED_CLIENT_IP_CHARS = 64;
/** Characters of the response bodies of one simulation together (what `settle_cost` may read of each is the live bound, 64 KiB). */
export const MAX_SIMULATED_BODY_CHARS = 1024 * 1024;
/** Latest time offset of a request from the first, in milliseconds: 31 days, the longest window a rate limit has. */
export const MAX_SIMULATED_OFFSET_MS = 31 * 24 * 3_600_000;
/**
 * CEL work and regex work of the whole simulation: sixteen requests' worth of the live per-request budgets.
 * Each request keeps the live budget (so decisions are the live ones); once the total passes, the rest are not run.
 */
export const MAX_SIMULATION_CEL_WORK = 16 * 1024 * 1024;
export const MAX_SIMULATION_REGEX_WORK = 8 * 1024 * 1024;
/**
 * Actions run and expressions evaluated, all requests together. Their work is mostly not CEL work (an action
 * parses the client address for its bucket key, builds its answer; an evaluation has its fixed cost), so the CEL
 * total does not bound it; once either count passes, the rest are not run.
 */
export const MAX_SIMULATION_ACTIONS = 4096;
export const MAX_SIMULATION_EXPRESSIONS = 32 * 1024;
/** Entries matched plus actions traced, all requests together: what the answer may list before the rest are not run. */
export const MAX_SIMULATION_TRACE_RECORDS = 20_000;
