/** The run-time budget of CEL work per request: what it charges, what happens past it, and the functions made linear. */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileExpression, type CompiledExpression } from "../../../src/policy/cel.ts";
import { CALL_UNITS, ITERATION_UNITS } from "../../../src/policy/cel-meter.ts";
import { EvaluationBudget, MAX_CEL_WORK_PER_REQUEST } from "../../../src/policy/evaluation-budget.ts";
import { makeExchange } from "../support/exchange.ts";

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
    // The evaluation itself; + takes 'ab' and 'cd' and produces 'abcd'; == takes 'abcd' twice and produces a bool.
    expect(unitsOf("'ab' + 'cd' == 'abcd'")).toBe(CALL_UNITS + CALL_UNITS + 4 + 4 + CALL_UNITS + 8);
    // A request value counts like a literal: the path of 16,385 characters is taken once by startsWith.
    expect(unitsOf("req.url.path.startsWith('/a')", LONG_PATH)).toBe(CALL_UNITS + CALL_UNITS + 16_385 + 2);
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

describe("work the meter must not miss (the review of the budget)", () => {
  it("lastIndexOf is charged text × pattern characters: two large headers no longer cost 777 ms a call", () => {
    const request = makeExchange({ headers: { "x-a": "a".repeat(86_000), "x-b": `${"a".repeat(42_000)}b` } });
    expect(compile("req.headers['x-a'][0].lastIndexOf(req.headers['x-b'][0]) < 0").evaluate(request)).toEqual({ error: BUDGET_MESSAGE });
    // An ordinary lastIndexOf is as cheap as ever.
    expect(compile("req.url.path.lastIndexOf('/') == 3").evaluate(makeExchange({ url: "https://a.test/v1/x" }))).toBe(true);
  });

  it("values are charged with everything nested in them: comparing lists of header maps is not 32 units", () => {
    const headers = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`x-h${i}`, "v".repeat(120)]));
    const request = () => makeExchange({ headers, budget: budgetOf(300_000) });
    expect(compile("[req.headers, req.headers] == [req.headers, req.headers]").evaluate(request())).toEqual({
      error: "expression exceeds the limit of 300000 units of work per request (calls, characters and list elements taken and produced, loop iterations)",
    });
    expect(compile("[1, 2] == [1, 2]").evaluate(request())).toBe(true);
  });

  it("the header map is built once per request and charged once, however many expressions read it", () => {
    const headers = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-h${i}`, "v".repeat(10)]));
    const request = makeExchange({ headers });
    // Reads the headers (the map is built when an expression first reads req) without a charged call.
    const always = compile("has(req.headers.x) || true");
    const before = request.budget.celWorkLeft();
    always.evaluate(request);
    const first = before - request.budget.celWorkLeft();
    for (let i = 0; i < 100; i++) always.evaluate(request);
    const each = (before - request.budget.celWorkLeft() - first) / 100;
    expect(each).toBe(CALL_UNITS);
    expect(first).toBeGreaterThan(100 * 14);
  });

  it("a request whose budget is spent stops evaluating at once, even expressions that call nothing", () => {
    const request = makeExchange({ budget: budgetOf(CALL_UNITS * 3) });
    const always = compile("true");
    expect([1, 2, 3, 4].map(() => always.evaluate(request))).toEqual([true, true, true, { error: expect.stringContaining("units of work") }]);
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
