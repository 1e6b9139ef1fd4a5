/**
 * matches() patterns: compiled once when the policy loads, never per request. Compiling is bounded by the
 * pattern's length and counted repetitions (compiling `(\pL|\pN){1000}` alone takes a tenth of a second);
 * matching costs up to (text length × program size), so the program size is bounded here and the work
 * of each request is metered where the pattern is used (cel.ts).
 */

import { RE2JS } from "@bufbuild/re2";
import { MAX_REGEX_DFA_STATES, MAX_REGEX_INSTRUCTIONS, MAX_REGEX_LENGTH, MAX_REGEX_REPEAT } from "./limits.ts";

export interface CompiledPattern {
  readonly instructions: number;
  test(text: string): boolean;
}

export type PatternResult = { ok: true; pattern: CompiledPattern } | { ok: false; message: string };

const COUNTED_REPEAT = /\{(\d+)(?:,(\d*))?\}/g;

export function compilePattern(pattern: string): PatternResult {
  const shown = pattern.length > 40 ? `${JSON.stringify(pattern.slice(0, 40))}…` : JSON.stringify(pattern);
  if (pattern.length > MAX_REGEX_LENGTH) {
    return { ok: false, message: `pattern ${shown} exceeds the limit of ${MAX_REGEX_LENGTH} characters (has ${pattern.length})` };
  }
  for (const [, low, high] of pattern.matchAll(COUNTED_REPEAT)) {
    const count = Math.max(Number(low), Number(high || 0));
    if (count > MAX_REGEX_REPEAT) return { ok: false, message: `pattern ${shown} repeats ${count} times, over the limit of ${MAX_REGEX_REPEAT}` };
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (error) {
    return { ok: false, message: `pattern ${shown} is not a valid RE2 expression: ${(error as Error).message}` };
  }
  const re2 = compiled.re2();
  const instructions = re2.prog.numInst();
  if (instructions > MAX_REGEX_INSTRUCTIONS) {
    return { ok: false, message: `pattern ${shown} compiles to ${instructions} instructions, over the limit of ${MAX_REGEX_INSTRUCTIONS}` };
  }
  // The DFA caches states across calls; past the limit it starts over, and after a few restarts it falls
  // back to the NFA, which is linear. A small limit bounds both the memory and the restarts' cost.
  re2.dfa.stateLimit = MAX_REGEX_DFA_STATES;
  return { ok: true, pattern: { instructions, test: (text) => compiled.test(text) } };
}
