/**
 * The class, not the instance (fast-check): any expression put together from the catalogue's functions on
 * hostile request values (16 KiB headers and path, 4,095 query parameters, lists from split) either fails
 * with the budget's error or finishes, and either way did no more real work (cel-work-model.ts) than the
 * request's budget pays for.
 */

import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { compileExpression } from "../../../src/policy/cel.ts";
import { EvaluationBudget, MAX_CEL_WORK_PER_REQUEST, MAX_REGEX_WORK_PER_REQUEST } from "../../../src/policy/evaluation-budget.ts";
import { makeExchange } from "../support/exchange.ts";
import { FIELD } from "./cel-hostile-cases.ts";
import { instrumentWork } from "./cel-work-model.ts";

const work = instrumentWork();
afterAll(() => work.restore());

const HEADERS: [string, string][] = [
  ["x-a", "a".repeat(FIELD)],
  ["x-ip", "1".repeat(FIELD)],
  ["x-zone", `fe80::1%${"a".repeat(FIELD - 8)}`],
  ["x-list", "10.0.0.0/8,".repeat(FIELD / 11)],
  ...Array.from({ length: 100 }, (_, i): [string, string] => ["set-cookie", `c${i}=${"v".repeat(32)}`]),
];
const URL_TEXT = `https://api.example.test/${"p".repeat(FIELD / 2)}?${"a=0&".repeat(FIELD / 8)}`;

/** A quarter of a request's: the property holds at any budget, and a run that spends it all is a quarter as long. */
const BUDGET = MAX_CEL_WORK_PER_REQUEST / 4;

const text = fc.constantFrom(
  "req.headers['x-a'][0]",
  "req.headers['x-ip'][0]",
  "req.headers['x-zone'][0]",
  "req.url.path",
  "getQueryParam('a')[0]",
  "'2001:db8::1'",
  "'10.0.0.0/8'",
  "'America/New_York'",
);
const derived = fc.oneof(
  text,
  text.map((s) => `${s}.lowerAscii()`),
  text.map((s) => `${s}.substring(1)`),
  text.map((s) => `${s}.trim()`),
  text.map((s) => `${s}.replace('a', '')`),
);
const list = fc.oneof(
  fc.constant("getQueryParam('a')"),
  fc.constant("getReqHeader('set-cookie')"),
  fc.constant("req.headers['x-list'][0].split(',')"),
  derived.map((s) => `${s}.split('')`),
  fc.constant("['10.0.0.0/8', 'fe80::/10', '2001:db8::/32']"),
);

/** Calls that may sit in a loop body: no comprehension, nothing that lengthens a value. */
const flat = fc.oneof(
  fc.tuple(derived, derived).map(([a, b]) => `inCidrRange(${a}, ${b})`),
  fc.tuple(derived, list).map(([a, l]) => `inCidrRanges(${a}, ${l})`),
  fc.tuple(derived, derived).map(([a, b]) => `${a}.contains(${b})`),
  fc.tuple(derived, derived).map(([a, b]) => `${a}.startsWith(${b}) || ${a}.endsWith(${b})`),
  fc.tuple(derived, derived).map(([a, b]) => `${a}.indexOf(${b}) > 0`),
  fc.tuple(derived, derived).map(([a, b]) => `${a}.lastIndexOf(${b}) > 0`),
  fc.tuple(derived, derived).map(([a, b]) => `${a} == ${b} || ${a} < ${b}`),
  fc.tuple(derived, list).map(([a, l]) => `${a} in ${l}`),
  fc.tuple(list, list).map(([a, b]) => `${a} == ${b}`),
  list.map((l) => `${l}.size() > 3`),
  derived.map((s) => `size(${s}) > 3`),
  derived.map((s) => `int(${s}) > 0 || uint(${s}) > 0u || double(${s}) > 0.0`),
  derived.map((s) => `timestamp(${s}) > timestamp(0) || duration(${s}) > duration('0s')`),
  derived.map((s) => `timestamp(0).getHours(${s}) > 0 || timestamp(0).getDayOfYear(${s}) > 0`),
  fc.constantFrom("hasQueryParam('zz')", "getQueryParam('zz').size() > 0", "hasReqHeader('x-a')", "getReqHeader('x-a')[0] != ''"),
);
/** A test alone, a loop over a request-sized list, or a test repeated by a loop over a literal list (which may read the request). */
const repeated = fc.oneof(
  flat,
  list.map((l) => `${l}.exists(x, x == 'b')`),
  list.map((l) => `${l}.filter(x, x != 'b').size() > 0`),
  list.map((l) => `${l}.map(x, x.size()).size() > 0`),
  fc.tuple(fc.integer({ min: 2, max: 16 }), flat).map(([n, t]) => `[${Array.from({ length: n }, (_, i) => i).join(", ")}].all(i, !(${t}))`),
);
/** One growing call at most, outside loops (the static cost model's rule). */
const growing = fc.oneof(
  list.map((l) => `${l}.join(',') != ''`),
  derived.map((s) => `strings.quote(${s}) != ''`),
  list.map((l) => `'%s'.format([${l}]) != ''`),
  fc.tuple(derived, derived).map(([a, b]) => `${a} + ${b} != ''`),
);
const expression = fc
  .tuple(fc.array(repeated, { minLength: 1, maxLength: 2 }), fc.option(growing))
  .map(([tests, grow]) => `[${[...tests, ...(grow ? [grow] : [])].join(", ")}].size() > 0`);

describe("no expression costs more than the request's budget pays for", () => {
  it("any expression of the catalogue's functions on hostile values fails on the budget or stays within it", () => {
    fc.assert(
      fc.property(expression, (source) => {
        const compiled = compileExpression(source, "inbound");
        if (!compiled.ok) throw new Error(`${source}: ${compiled.message}`);
        const budget = new EvaluationBudget({ celWork: BUDGET, regexWork: MAX_REGEX_WORK_PER_REQUEST, logBytes: 0 });
        const exchange = makeExchange({ url: URL_TEXT, headers: HEADERS, budget });
        work.reset();
        compiled.expression.evaluate(exchange);
        const charged = BUDGET - budget.celWorkLeft();
        expect(work.units()).toBeLessThanOrEqual(Math.min(charged, BUDGET));
      }),
      { numRuns: 100 },
    );
  });
});
