/** The run-time budget of CEL work per request: what it charges, what happens past it, and the functions made linear. */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileExpression, type CompiledExpression } from "../../src/policy/cel.ts";
import { CALL_UNITS, ITERATION_UNITS } from "../../src/policy/cel-meter.ts";
import { EvaluationBudget, MAX_CEL_WORK_PER_REQUEST } from "../../src/policy/evaluation-budget.ts";
import { makeExchange } from "./support/exchange.ts";

function compile(source: string): CompiledExpression {
  const compiled = compileExpression(source, "inbound");
  if (!compiled.ok) throw new Error(compiled.message);
  return compiled.expression;
}

const budgetOf = (celWork: number) => new EvaluationBudget({ celWork, regexWork: 1 << 30, logBytes: 1 << 20 });

/** The least CEL budget under which `source` evaluates without a budget error (binary search). */
function unitsOf(source: string, url = "https://api.example.test/"): number {
  const expression = compile(source);
  let low = 0;
  let high = 1 << 26;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if (typeof expression.evaluate(makeExchange({ url, budget: budgetOf(middle) })) === "boolean") high = middle;
    else low = middle + 1;
  }
  return low;
}

const HOSTILE = "req.url.path.split('').map(c, c).size() > 0";
const LONG_PATH = `https://api.example.test/${"a".repeat(16 * 1024)}`;
const BUDGET_MESSAGE = `expression exceeds the limit of ${MAX_CEL_WORK_PER_REQUEST} units of work per request (calls, characters and list elements taken and produced, loop iterations)`;

describe("the CEL work budget of a request", () => {
  it("the review's hostile expression on a 16 KB path fails with the budget's message instead of running for seconds", () => {
    expect(compile(HOSTILE).evaluate(makeExchange({ url: LONG_PATH }))).toEqual({ error: BUDGET_MESSAGE });
  });

  it("the same expression on an ordinary path is true", () => {
    expect(compile(HOSTILE).evaluate(makeExchange({ url: "https://api.example.test/v1/users/42" }))).toBe(true);
  });

  it("is shared by every expression of one request, and a new request starts with a full budget", () => {
    const copies = Array.from({ length: 75 }, () => compile(HOSTILE));
    const request = makeExchange({ url: LONG_PATH });
    expect(copies.map((copy) => copy.evaluate(request))).toEqual(copies.map(() => ({ error: BUDGET_MESSAGE })));
    // Once spent, even a cheap expression of the same request fails…
    expect(compile("req.method == 'GET'").evaluate(request)).toEqual({ error: BUDGET_MESSAGE });
    // …while the next request is evaluated as usual.
    expect(compile("req.method == 'GET'").evaluate(makeExchange({ url: LONG_PATH }))).toBe(true);
  });

  it("charges each call CALL_UNITS plus the characters it takes and produces", () => {
    // + takes 'ab' and 'cd' and produces 'abcd'; == takes 'abcd' and 'abcd' and produces a bool.
    expect(unitsOf("'ab' + 'cd' == 'abcd'")).toBe(CALL_UNITS + 4 + 4 + CALL_UNITS + 8);
    // A request value counts like a literal: the path of 16,385 characters is taken once by startsWith.
    expect(unitsOf("req.url.path.startsWith('/a')", LONG_PATH)).toBe(CALL_UNITS + 16_385 + 2);
  });

  it("charges ITERATION_UNITS for every element a comprehension goes over", () => {
    const three = unitsOf("[1, 2, 3].exists(x, x == 9)");
    const six = unitsOf("[1, 2, 3, 4, 5, 6].exists(x, x == 9)");
    expect(six - three).toBeGreaterThanOrEqual(3 * ITERATION_UNITS);
  });

  it("charges map() and filter() for the lists they build, so their cost is bounded by the budget", () => {
    const small = unitsOf("'abcdefgh'.split('').map(c, c).size() == 8");
    const double = unitsOf("'abcdefghabcdefgh'.split('').map(c, c).size() == 16");
    // Building the result copies the list built so far once per element: growth faster than linear is charged.
    expect(double).toBeGreaterThan(2 * small);
  });
});

describe("library functions replaced by linear ones", () => {
  const evaluate = (source: string) => compile(source).evaluate(makeExchange());
  /** A CEL string literal of any text: the parser refuses raw astral characters, so every code point is escaped. */
  const literal = (text: string) =>
    `"${[...text]
      .map((char) => {
        const point = char.codePointAt(0)!;
        return point > 0xffff ? `\\U${point.toString(16).padStart(8, "0")}` : `\\u${point.toString(16).padStart(4, "0")}`;
      })
      .join("")}"`;

  it("replace() replaces every occurrence, the first n, or none, as CEL specifies", () => {
    expect(evaluate("'a-b-c'.replace('-', '+') == 'a+b+c'")).toBe(true);
    expect(evaluate("'a-b-c'.replace('-', '+', 1) == 'a+b-c'")).toBe(true);
    expect(evaluate("'a-b-c'.replace('-', '+', 0) == 'a-b-c'")).toBe(true);
    expect(evaluate("'a-b-c'.replace('-', '+', -1) == 'a+b+c'")).toBe(true);
    expect(evaluate("'abc'.replace('', '') == 'abc'")).toBe(true);
  });

  it("replace(), size(), lowerAscii(), upperAscii() and + on lists agree with their definitions on any text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), fc.constantFrom("a", "é", "/", "😀"), (text, old) => {
        const replaced = text.replaceAll(old, "");
        expect(evaluate(`${literal(text)}.replace(${literal(old)}, '') == ${literal(replaced)}`)).toBe(true);
        expect(evaluate(`${literal(text)}.size() == ${[...text].length}`)).toBe(true);
        expect(evaluate(`size(${literal(text)}) == ${[...text].length}`)).toBe(true);
        const lower = text.replace(/[A-Z]/g, (c) => c.toLowerCase());
        const upper = text.replace(/[a-z]/g, (c) => c.toUpperCase());
        expect(evaluate(`${literal(text)}.lowerAscii() == ${literal(lower)} && ${literal(text)}.upperAscii() == ${literal(upper)}`)).toBe(true);
        const list = (items: string[]) => `[${items.map(literal).join(", ")}]`;
        expect(evaluate(`${list(text.split("/"))} + ['x'] == ${list([...text.split("/"), "x"])}`)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
