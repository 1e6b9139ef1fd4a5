/**
 * The `from` → `to` replacement of url-rewrite and redirect, as ngrok's (Go's regexp.ReplaceAllString): every
 * match of an RE2 pattern in the URL replaced by `to`, in which `$1`, `${1}`, `$name` and `${name}` stand for
 * capture groups and `$$` for a dollar. RE2 (re2js: linear time, no backtracking) because @bufbuild/re2, which
 * matches() uses, keeps no capture positions. Bounded like matches(): the pattern's length, counted
 * repetitions and program size when it is compiled; the work of each search charged to the request's regex
 * budget before it runs; and what the replacement produces cut off at a limit (an error, never a truncated URL).
 */

import { RE2JS } from "re2js";
import { BudgetExceeded, type EvaluationBudget } from "./evaluation-budget.ts";
import { MAX_REGEX_REPEAT } from "./limits.ts";

/** Characters of a `from` pattern, as written and after interpolation. */
export const MAX_REWRITE_PATTERN_CHARS = 1024;
/** Program size (RE2 instructions) of a compiled `from`; a search costs up to (text length × instructions). */
export const MAX_REWRITE_INSTRUCTIONS = 1000;
/** Characters of a URL the action reads, of a written `to`, and of what the replacement produces. */
export const MAX_REWRITE_URL_CHARS = 8192;

export interface RewritePattern {
  readonly source: string;
  readonly instructions: number;
  readonly regex: RE2JS;
}

export type RewritePatternResult = { ok: true; pattern: RewritePattern } | { ok: false; message: string };

const COUNTED_REPEAT = /\{(\d+)(?:,(\d*))?\}/g;

function shown(pattern: string): string {
  return pattern.length > 40 ? `${JSON.stringify(pattern.slice(0, 40))}…` : JSON.stringify(pattern);
}

/** Compiles `from`, refusing what would cost too much to compile or to run. */
export function compileRewritePattern(source: string): RewritePatternResult {
  if (source.length > MAX_REWRITE_PATTERN_CHARS) {
    return { ok: false, message: `pattern ${shown(source)} exceeds the limit of ${MAX_REWRITE_PATTERN_CHARS} characters (has ${source.length})` };
  }
  // Checked before compiling: RE2 expands `x{1000}` into a thousand copies of x while it compiles.
  for (const [, low, high] of source.matchAll(COUNTED_REPEAT)) {
    const count = Math.max(Number(low), Number(high || 0));
    if (count > MAX_REGEX_REPEAT) return { ok: false, message: `pattern ${shown(source)} repeats ${count} times, over the limit of ${MAX_REGEX_REPEAT}` };
  }
  let regex: RE2JS;
  try {
    regex = RE2JS.compile(source);
  } catch (error) {
    return { ok: false, message: `pattern ${shown(source)} is not a valid RE2 expression: ${(error as Error).message}` };
  }
  const instructions = regex.programSize();
  if (instructions > MAX_REWRITE_INSTRUCTIONS) {
    return { ok: false, message: `pattern ${shown(source)} compiles to ${instructions} instructions, over the limit of ${MAX_REWRITE_INSTRUCTIONS}` };
  }
  return { ok: true, pattern: { source, instructions, regex } };
}

/** One piece of a parsed `to`: text as it is, or a capture group by number or name. */
type ReplacementPart = { readonly text: string } | { readonly group: number | string };

const GROUP_NAME = /^[A-Za-z0-9_]+/;

/**
 * `to` as Go's Regexp.Expand reads it: `$name` takes the longest run of letters, digits and `_` (so `$1x` is
 * the group named `1x`, as in Go); `${name}` ends at its brace; `$$` is a dollar; any other `$` is itself.
 */
export function parseReplacement(to: string): ReplacementPart[] {
  const parts: ReplacementPart[] = [];
  let text = "";
  let i = 0;
  while (i < to.length) {
    const dollar = to.indexOf("$", i);
    if (dollar < 0) {
      text += to.slice(i);
      break;
    }
    text += to.slice(i, dollar);
    const rest = to.slice(dollar + 1);
    let name: string | undefined;
    let length = 0;
    if (rest.startsWith("$")) {
      text += "$";
      i = dollar + 2;
      continue;
    }
    if (rest.startsWith("{")) {
      const close = rest.indexOf("}");
      const inner = close > 1 ? rest.slice(1, close) : "";
      if (inner && GROUP_NAME.exec(inner)?.[0] === inner) [name, length] = [inner, close + 1];
    } else {
      const match = GROUP_NAME.exec(rest);
      if (match) [name, length] = [match[0], match[0].length];
    }
    if (name === undefined) {
      text += "$";
      i = dollar + 1;
      continue;
    }
    if (text) parts.push({ text });
    text = "";
    parts.push({ group: /^\d+$/.test(name) ? Number(name) : name });
    i = dollar + 1 + length;
  }
  if (text) parts.push({ text });
  return parts;
}

/** `$` written as `$$`, so that text put into `to` by interpolation is never read as a group reference. */
export function quoteReplacementText(text: string): string {
  return text.replaceAll("$", "$$$$");
}

export type ReplaceResult =
  | { readonly ok: true; readonly text: string; readonly replaced: boolean; readonly matches: readonly string[] }
  | { readonly ok: false; readonly code: string; readonly message: string };

export const REWRITE_BUDGET_ERROR = "ERR_REWRITE_REGEX_BUDGET";
export const REWRITE_TOO_LONG_ERROR = "ERR_REWRITE_TOO_LONG";

/**
 * Every match of `pattern` in `text` replaced by `to` (empty matches next to a previous match skipped, as in
 * Go). `matches`: the first match and its groups (an unmatched group is ''). Each search is charged to
 * `budget` as (characters left to search × instructions) before it runs.
 */
export function replaceAllBounded(
  pattern: RewritePattern,
  text: string,
  to: readonly ReplacementPart[],
  budget: EvaluationBudget,
  maxChars: number,
): ReplaceResult {
  const matcher = pattern.regex.matcher(text);
  const names = pattern.regex.namedGroups() as Record<string, number>;
  const groups = matcher.groupCount();
  let out = "";
  let copiedTo = 0;
  let previousEnd = -1;
  let matches: string[] = [];
  let searchFrom = 0;
  for (;;) {
    try {
      budget.chargeRegex(Math.max(1, text.length - searchFrom + 1) * pattern.instructions);
    } catch (error) {
      if (!(error instanceof BudgetExceeded)) throw error;
      return { ok: false, code: REWRITE_BUDGET_ERROR, message: `The pattern ${shown(pattern.source)} exceeds the regex work a request may do.` };
    }
    if (!matcher.find()) break;
    const start = matcher.start();
    const end = matcher.end();
    searchFrom = end === start ? end + 1 : end;
    if (start === end && start === previousEnd) continue;
    if (matches.length === 0) matches = Array.from({ length: groups + 1 }, (_, group) => matcher.group(group) ?? "");
    out += text.slice(copiedTo, start);
    for (const part of to) {
      if ("text" in part) out += part.text;
      else {
        const group = typeof part.group === "number" ? part.group : names[part.group];
        if (group !== undefined && group <= groups) out += matcher.group(group) ?? "";
      }
      if (out.length > maxChars) return tooLong(maxChars);
    }
    copiedTo = end;
    previousEnd = end;
  }
  if (matches.length === 0) return { ok: true, text, replaced: false, matches };
  out += text.slice(copiedTo);
  if (out.length > maxChars) return tooLong(maxChars);
  return { ok: true, text: out, replaced: true, matches };
}

function tooLong(maxChars: number): ReplaceResult {
  return { ok: false, code: REWRITE_TOO_LONG_ERROR, message: `The rewritten URL exceeds the limit of ${maxChars} characters.` };
}
