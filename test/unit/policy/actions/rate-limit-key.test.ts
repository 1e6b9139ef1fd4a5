/** Bucket keys of rate-limit actions: the seed's forms as before, CEL elements, and what a failing element names. */

import { describe, expect, it } from "vitest";
import {
  type CompiledBucketKey,
  compileBucketKey,
  KEY_ERROR,
  MAX_KEY_ELEMENT_CHARS,
  MAX_KEY_ERROR_CHARS,
} from "../../../../src/policy/actions/rate-limit-key.ts";
import { expressionCompiler } from "../../../../src/policy/cel.ts";
import { EvaluationBudget, MAX_CEL_WORK_PER_REQUEST } from "../../../../src/policy/evaluation-budget.ts";
import { makeExchange } from "../../support/exchange.ts";

/** The phase and the gateway's expression compiler, as the policy compiler hands them to a rate-limit action. */
const inbound = { phase: "inbound", expressions: expressionCompiler() } as const;

function keyOf(...elements: string[]): CompiledBucketKey {
  const compiled = compileBucketKey(elements, inbound);
  if (!("key" in compiled)) throw new Error(compiled.message);
  return compiled.key;
}

const BUDGET_MESSAGE = `expression exceeds the limit of ${MAX_CEL_WORK_PER_REQUEST} units of work per request`;

describe("bucket_key", () => {
  it("the seed's forms name the bucket exactly as before: their values as JSON, shown joined with ':'", () => {
    const key = keyOf("conn.client_ip", "req.headers['x-api-key']", "getReqHeader('Authorization')", "req.host");
    const exchange = makeExchange({ headers: { "x-api-key": "k1", authorization: "BEARER  t" }, clientIp: "2001:db8::1" });
    expect(key(exchange)).toEqual({
      name: JSON.stringify(["2001:db8::/64", "k1", "bearer t", "api.example.test"]),
      shown: "2001:db8::/64:k1:bearer t:api.example.test",
    });
    // An absent header is '' and no error.
    expect(keyOf("req.headers['x-absent']")(makeExchange())).toEqual({ name: '[""]', shown: "" });
  });

  it("the seed's forms evaluate no CEL: with the request's CEL budget spent they still read, where a CEL element fails", () => {
    const spent = () => new EvaluationBudget({ celWork: 0, regexWork: 0, logBytes: 0 });
    const exchange = makeExchange({ headers: { "x-api-key": "k1" }, budget: spent() });
    expect(keyOf("req.headers['x-api-key']", "conn.client_ip")(exchange)).toEqual({ name: '["k1","203.0.113.7"]', shown: "k1:203.0.113.7" });
    expect(keyOf("getReqHeader('x-api-key')[0]")(makeExchange({ headers: { "x-api-key": "k1" }, budget: spent() }))).toMatchObject({ name: "[null]" });
  });

  it("a CEL element names the bucket by its string; ints and bools are written as CEL's string() writes them", () => {
    const exchange = makeExchange({ url: "https://api.example.test:8443/v1/users?plan=pro", headers: { "x-tenant": "acme" } });
    expect(keyOf("req.url.path", "conn.client_ip + req.host")(exchange)).toEqual({
      name: JSON.stringify(["/v1/users", "203.0.113.7api.example.test"]),
      shown: "/v1/users:203.0.113.7api.example.test",
    });
    expect(keyOf("req.url.port", "hasReqHeader('x-tenant')", "getReqHeader('x-tenant')[0]")(exchange).shown).toBe("8443:true:acme");
  });

  it("an element that fails is null in the name, so it never shares a bucket with the value ''", () => {
    const key = keyOf("getReqHeader('x-tenant')[0]");
    const failed = key(makeExchange());
    expect(failed.name).toBe("[null]");
    expect(failed.shown).toBe("");
    expect(failed.error).toMatch(/^bucket_key\[0\]: /);
    expect(key(makeExchange({ headers: { "x-tenant": "" } }))).toEqual({ name: '[""]', shown: "" });
    expect(KEY_ERROR).toBe("ERR_RATE_LIMIT_KEY");
  });

  it("a dyn element of another type at request time fails, saying what it was", () => {
    expect(keyOf("dyn(1.5)")(makeExchange())).toEqual({ name: "[null]", shown: "", error: "bucket_key[0]: yields no string, int, uint or bool (a number)" });
  });

  it("a list, a map or a double is refused at load, naming the element", () => {
    expect(compileBucketKey(["conn.client_ip", "req.url.query_params['plan']"], inbound)).toEqual({
      index: 1,
      message: "must be a CEL expression yielding a string (or an int, uint or bool), and this one is list(string) (take one element, such as [0])",
    });
    expect(compileBucketKey(["1.5"], inbound)).toMatchObject({ index: 0, message: expect.stringContaining("this one is double") });
    expect(compileBucketKey(["req.headers"], inbound)).toMatchObject({ index: 0, message: expect.stringContaining("map(string, list(string))") });
  });
});

describe("bucket_key against hostile values", () => {
  it("a CEL key producing a 1 MB string fails within the request's budget and counts in the failed keys' bucket", () => {
    const megabyte = "k".repeat(1024 * 1024);
    for (const element of ["getReqHeader('x-big')[0]", "req.headers['x-big'][0] + 'x'"]) {
      const value = keyOf(element)(makeExchange({ headers: { "x-big": megabyte } }));
      expect(value.name).toBe("[null]");
      expect(value.error).toContain(BUDGET_MESSAGE.slice(0, 40));
      expect(value.error!.length).toBeLessThanOrEqual(MAX_KEY_ERROR_CHARS);
    }
  });

  it(`a value within the budget but longer than ${MAX_KEY_ELEMENT_CHARS} characters fails; the seed's header form reads it whole, as before`, () => {
    const long = "k".repeat(MAX_KEY_ELEMENT_CHARS + 1);
    const exchange = makeExchange({ headers: { "x-long": long } });
    expect(keyOf("getReqHeader('x-long')[0]")(exchange)).toEqual({
      name: "[null]",
      shown: "",
      error: `bucket_key[0]: yields ${MAX_KEY_ELEMENT_CHARS + 1} characters, more than ${MAX_KEY_ELEMENT_CHARS}`,
    });
    expect(keyOf("getReqHeader('x-long')[0].substring(1)")(exchange).shown).toHaveLength(MAX_KEY_ELEMENT_CHARS);
    expect(keyOf("req.headers['x-long']")(exchange).shown).toBe(long);
  });

  it("an expression that would never end is refused at load when its cost grows with the square of the request", () => {
    expect(compileBucketKey(["req.url.path.split('').map(c, req.url.path).join('')"], inbound)).toMatchObject({
      index: 0,
      message: expect.stringContaining("its cost would grow with the square of the request"),
    });
  });

  it("a linear expression that runs past the budget on a 16 KB path stops there and fails", () => {
    const key = keyOf("req.url.path.split('').map(c, c.upperAscii()).join('')");
    const value = key(makeExchange({ url: `https://api.example.test/${"a".repeat(16 * 1024)}` }));
    expect(value).toMatchObject({ name: "[null]", shown: "", error: expect.stringContaining(BUDGET_MESSAGE) });
    // On an ordinary path the same expression is a key.
    expect(key(makeExchange({ url: "https://api.example.test/ab" })).shown).toBe("/AB");
  });

  it("nested comprehensions are refused at load", () => {
    expect(compileBucketKey(["[1].map(x, [1].map(y, 'k'))[0][0]"], inbound)).toMatchObject({ index: 0, message: expect.stringContaining("nest deeper") });
  });
});
