/**
 * Every CEL function's cost charged as it is spent (issue 41): the worst input of each within the static
 * bounds does no more real work (cel-work-model.ts) than the meter charges, so no request's CEL does more
 * than its budget's worth; the functions that did are fixed to do less, or charged for what they do.
 */

import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { compileExpression, compileValueExpression, MAX_ADDRESS_CHARS } from "../../../src/policy/cel.ts";
import { celEnv, celList, celMap, parse, plan } from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import { ADDRESS_PARSE_UNITS, extraWork, FLOAT_FORMAT_UNITS, INTEGER_PARSE_UNITS_PER_CHAR, TIME_ZONE_UNITS } from "../../../src/policy/cel-call-work.ts";
import { EvaluationBudget, MAX_CEL_WORK_PER_REQUEST } from "../../../src/policy/evaluation-budget.ts";
import { simulatePolicy } from "../../../src/policy/simulate/index.ts";
import { makeExchange, type ExchangeOptions } from "../support/exchange.ts";
import { FIELD, HOSTILE_CASES } from "./cel-hostile-cases.ts";
import { instrumentWork } from "./cel-work-model.ts";

const work = instrumentWork();
afterAll(() => work.restore());
beforeEach(() => work.reset());

const BUDGET_MESSAGE = `expression exceeds the limit of ${MAX_CEL_WORK_PER_REQUEST} units of work per request (calls, characters and list elements taken and produced, loop iterations)`;
const MANY_PARAMS = `https://api.example.test/?${"a=0&".repeat(FIELD / 4 - 8)}`;

/** Evaluates `source` once under a fresh budget: its result, the units charged and the work the model counted. */
function run(source: string, options: ExchangeOptions = {}, celWork = MAX_CEL_WORK_PER_REQUEST) {
  const compiled = compileValueExpression(source, "inbound");
  if (!compiled.ok) throw new Error(compiled.message);
  const budget = new EvaluationBudget({ celWork, regexWork: 1 << 30, logBytes: 1 << 20 });
  work.reset();
  const result = compiled.expression.evaluate(makeExchange({ ...options, budget }));
  return { result, charged: celWork - budget.celWorkLeft(), work: work.units(), counts: { ...work.counts } };
}

describe("the worst input of each function stays within the request's budget", () => {
  it.each(HOSTILE_CASES.map((hostile) => [hostile.name, hostile] as const))("%s", (_name, hostile) => {
    const { charged, work: done } = run(hostile.source, hostile.exchange);
    // Either it finished within the budget, or the budget stopped it; what it did is paid for either way.
    expect(done).toBeLessThanOrEqual(Math.min(charged, MAX_CEL_WORK_PER_REQUEST));
  });
});

describe("inCidrRange and inCidrRanges (cel.ts)", () => {
  it("the review's expression on a 16 KiB address and 4,095 ranges is cut off before it parses anything (it ran 1.95–4.05 s)", () => {
    const { result, counts } = run("inCidrRanges(req.headers['x-ip'][0], getQueryParam('a'))", {
      url: MANY_PARAMS,
      headers: { "x-ip": "1".repeat(FIELD) },
    });
    expect(result).toEqual({ error: BUDGET_MESSAGE });
    expect(counts.parsedChars).toBe(0);
  });

  it(`an address text longer than ${MAX_ADDRESS_CHARS} characters is no address: false without parsing, though ipaddr.js takes any zone`, () => {
    const zoned = `fe80::1%${"a".repeat(MAX_ADDRESS_CHARS)}`;
    const { result, counts } = run(`inCidrRange('${zoned}', 'fe80::/10') || inCidrRanges('${zoned}', ['fe80::/10'])`);
    expect(result).toBe(false);
    expect(counts.parses).toBe(0);
    // An address of at most the bound, zone included, is still one.
    expect(run(`inCidrRange('fe80::1%eth0', 'fe80::/10')`).result).toBe(true);
  });

  it("a range text longer than an address and a prefix is no range: false without parsing", () => {
    const { result, counts } = run(`inCidrRange('10.0.0.1', '${"0".repeat(200)}10.0.0.0/8')`);
    expect(result).toBe(false);
    expect(counts.parses).toBe(1);
  });

  it("inCidrRanges parses the address once per call and each range once, and is charged for every parse", () => {
    const { result, charged, counts } = run("inCidrRanges('2001:db8::1', getQueryParam('a'))", {
      url: `https://api.example.test/?${"a=10.0.0.0/8&".repeat(100)}`,
    });
    expect(result).toBe(false);
    expect(counts.parses).toBe(101);
    expect(charged).toBeGreaterThan(101 * ADDRESS_PARSE_UNITS);
  });

  it("the same expression in a simulation is cut off there too (POST /traffic_policy_simulations)", async () => {
    const policy = ["inbound:", `  - expressions: ["inCidrRanges(req.headers['x-ip'][0], getQueryParam('a'))"]`, "    actions: [{ type: deny }]"].join("\n");
    const request = { method: "GET", url: MANY_PARAMS, client_ip: "203.0.113.7", at_ms: 0, headers: { "x-ip": "1".repeat(FIELD) } };
    const simulated = await simulatePolicy({ policy, requests: [request, request] }, { now: () => 0 });
    if (!simulated.ok) throw new Error(JSON.stringify(simulated.issues));
    expect(simulated.decisions.map((decision) => decision.expression_errors.map((error) => error.message))).toEqual([[BUDGET_MESSAGE], [BUDGET_MESSAGE]]);
    expect(work.counts.parsedChars).toBe(0);
  });
});

describe("the other functions whose work is not their size", () => {
  const LOOP = `[${Array.from({ length: 64 }, (_, i) => i).join(", ")}]`;

  it("getQueryParam and hasQueryParam are charged a unit per character of the query they scan, each call", () => {
    const source = `${LOOP}.all(x, !hasQueryParam('zz') && getQueryParam('zz').size() == 0)`;
    const { result, charged, work: done, counts } = run(source, { url: MANY_PARAMS }, 8 * MAX_CEL_WORK_PER_REQUEST);
    expect(result).toBe(true);
    expect(counts.queryParamsScanned).toBe(2 * 64 * (FIELD / 4 - 8));
    expect(charged).toBeGreaterThanOrEqual(done);
  });

  it("getReqHeader('set-cookie') reads the set-cookie fields alone, never iterating every header", () => {
    const headers = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`x-h${i}`, "v"]));
    const { result, counts } = run(`${LOOP}.all(x, getReqHeader('set-cookie').size() == 0)`, { headers });
    expect(result).toBe(true);
    expect(counts.headersIterated).toBe(0);
    expect(
      run("getReqHeader('set-cookie') == ['a=1', 'b=2, c']", {
        headers: [
          ["set-cookie", "a=1"],
          ["set-cookie", "b=2, c"],
        ],
      }).result,
    ).toBe(true);
  });

  it(`a timestamp getter in an IANA time zone is charged ${TIME_ZONE_UNITS} units for the Intl formatter it builds`, () => {
    const zoned = run(`timestamp(0).getHours('America/New_York') == 19`);
    expect(zoned.result).toBe(true);
    expect(zoned.counts.timeZoneFormats).toBe(1);
    expect(zoned.charged).toBeGreaterThan(TIME_ZONE_UNITS);
    // A fixed offset builds none, and is not charged for one.
    const fixed = run(`timestamp(0).getHours('+01:00') == 1`);
    expect(fixed.counts.timeZoneFormats).toBe(0);
    expect(fixed.charged).toBeLessThan(TIME_ZONE_UNITS);
  });

  it(`format() is charged ${FLOAT_FORMAT_UNITS} units per %f placeholder, for the Intl.NumberFormat it builds`, () => {
    const formatted = run("'%f and %.2f'.format([0.5, 0.25]) == '0.500000 and 0.25'");
    expect(formatted.result).toBe(true);
    expect(formatted.counts.numberFormats).toBe(2);
    expect(formatted.charged).toBeGreaterThan(2 * FLOAT_FORMAT_UNITS);
  });

  it("format() of a map in no order (a JSON body an upstream wrote) is charged for the sort of its entries", () => {
    // Request maps come sorted (headers) or short (128 cookies); a response body's keys are in the upstream's order.
    const keys = Array.from({ length: 4000 }, (_, i) => `k${(i * 7919) % 4000}`);
    const map = celMap(new Map(keys.map((key) => [key, "v"])));
    const program = plan(celEnv({ funcs: [...strings] }), parse("'%s'.format([m])"));
    work.reset();
    program({ m: map } as never);
    expect(work.counts.localeCompares).toBeGreaterThan(4000 * 8);
    expect(work.units()).toBeLessThanOrEqual(extraWork("format", "%s", [celList([map])]));
  });

  it(`int() and uint() of a string are charged ${INTEGER_PARSE_UNITS_PER_CHAR} more units per character for BigInt parsing`, () => {
    const digits = "9".repeat(FIELD);
    for (const source of ["int(req.headers['x-d'][0]) > 0", "uint(req.headers['x-d'][0]) > 0u"]) {
      expect(run(source, { headers: { "x-d": digits } }).charged).toBeGreaterThan((1 + INTEGER_PARSE_UNITS_PER_CHAR) * FIELD);
    }
  });

  it("join() joins as CEL specifies: with or without a separator, refusing a list holding other than strings", () => {
    const holds = (source: string) => {
      const compiled = compileExpression(source, "inbound");
      if (!compiled.ok) throw new Error(compiled.message);
      return compiled.expression.evaluate(makeExchange());
    };
    expect(holds("['a', 'b', 'c'].join() == 'abc' && ['a', 'b'].join(', ') == 'a, b' && [].join('-') == ''")).toBe(true);
    expect(holds("dyn(['a', 1]).join() == 'a1'")).toEqual({ error: "invalid argument to function join: list contains non-string value" });
  });
});
