/** The from → to replacement of url-rewrite and redirect: Go's ReplaceAllString semantics, and its bounds. */

import { describe, expect, it } from "vitest";
import { EvaluationBudget } from "../../../src/policy/evaluation-budget.ts";
import {
  compileRewritePattern,
  MAX_REWRITE_INSTRUCTIONS,
  MAX_REWRITE_PATTERN_CHARS,
  parseReplacement,
  quoteReplacementText,
  REWRITE_BUDGET_ERROR,
  REWRITE_TOO_LONG_ERROR,
  replaceAllBounded,
} from "../../../src/policy/rewrite-regex.ts";

function replace(pattern: string, text: string, to: string, budget = new EvaluationBudget(), max = 8192) {
  const compiled = compileRewritePattern(pattern);
  if (!compiled.ok) throw new Error(compiled.message);
  return replaceAllBounded(compiled.pattern, text, parseReplacement(to), budget, max);
}

describe("replacement", () => {
  it("every match is replaced, $1 and ${2} are groups, $$ a dollar", () => {
    expect(replace("([a-z])([0-9])", "a1-b2", "${2}$1$$")).toMatchObject({ ok: true, text: "1a$-2b$", replaced: true, matches: ["a1", "a", "1"] });
  });

  it("$1x is the group named 1x (absent: nothing), as in Go; ${1}x is group 1 then x", () => {
    expect(replace("(a)", "a", "$1x|${1}x")).toMatchObject({ text: "|ax" });
  });

  it("named groups by $name and ${name}; an unmatched or unknown group writes nothing", () => {
    expect(replace("(?P<id>[0-9]+)(z)?", "id=42", "<$id,${id},$2,$9,$nope>")).toMatchObject({ text: "id=<42,42,,,>" });
  });

  it("a $ not followed by a name is itself", () => {
    expect(replace("a", "a", "$-${}$")).toMatchObject({ text: "$-${}$" });
  });

  it("empty matches next to a previous match are skipped, as Go's ReplaceAllString does", () => {
    expect(replace("a*", "baaac", "X")).toMatchObject({ text: "XbXcX" });
  });

  it("no match: the text unchanged and no matches", () => {
    expect(replace("/nope", "https://h/x", "/y")).toEqual({ ok: true, text: "https://h/x", replaced: false, matches: [] });
  });

  it("interpolated text put into `to` with its $ doubled is written literally", () => {
    expect(replace("(x)", "x", quoteReplacementText("$1$$"))).toMatchObject({ text: "$1$$" });
  });
});

describe("bounds", () => {
  it("a pattern longer than the limit, a large counted repetition, or too many instructions is refused", () => {
    expect(compileRewritePattern("a".repeat(MAX_REWRITE_PATTERN_CHARS + 1))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/exceeds the limit of 1024 characters/),
    });
    expect(compileRewritePattern("(a|b){1000}")).toMatchObject({ ok: false, message: expect.stringMatching(/repeats 1000 times, over the limit of 100/) });
    expect(compileRewritePattern("((((a|b|c|d){100}){100}){100})")).toMatchObject({ ok: false, message: expect.stringMatching(/invalid repeat count/) });
    const wide = compileRewritePattern("[a-z]{100}[0-9]{100}(x|y){100}(p|q){100}(r|s){100}");
    expect(wide).toMatchObject({ ok: false, message: expect.stringMatching(new RegExp(`over the limit of ${MAX_REWRITE_INSTRUCTIONS}`)) });
    expect(compileRewritePattern("(a")).toMatchObject({ ok: false, message: expect.stringMatching(/not a valid RE2 expression/) });
  });

  it("backreferences and lookarounds are not RE2: refused at compile", () => {
    expect(compileRewritePattern("(a)\\1")).toMatchObject({ ok: false });
    expect(compileRewritePattern("(?=a)")).toMatchObject({ ok: false });
  });

  it("(a+)+$ on 4000 a's and a '!', catastrophic for a backtracking engine, is one linear search here", () => {
    // The budget allows 512 Ki units; a backtracking engine would need 2^4000 steps, RE2 4001 × a few instructions.
    expect(replace("(a+)+$", `${"a".repeat(4000)}!`, "x")).toMatchObject({ ok: true, replaced: false });
    expect(replace("(a+)+$", "a".repeat(4000), "x")).toMatchObject({ ok: true, replaced: true, text: "x" });
  });

  it("a search that would pass the request's regex budget is not run: an error, the URL not rewritten", () => {
    const budget = new EvaluationBudget({ celWork: 1e6, regexWork: 10_000, logBytes: 0 });
    expect(replace("(a|b)*c", "ab".repeat(4000), "x", budget)).toMatchObject({ ok: false, code: REWRITE_BUDGET_ERROR });
  });

  it("a replacement that expands past the limit is an error, never a truncated URL", () => {
    // Every empty match of `x*` in a 100-character text writes 100 characters: 10,000 for a limit of 8192.
    const result = replace("x*", "y".repeat(100), "z".repeat(100));
    expect(result).toMatchObject({ ok: false, code: REWRITE_TOO_LONG_ERROR });
  });
});
