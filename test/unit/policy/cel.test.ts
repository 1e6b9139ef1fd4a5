/** CEL in traffic policies: every variable and macro, the CIDR helpers, and what is refused at compile time. */

import { describe, expect, it } from "vitest";
import { compileExpression, ipInCidr } from "../../../src/policy/cel.ts";
import { loadPolicy } from "../../../src/policy/compile.ts";
import { runPhase } from "../../../src/policy/evaluate.ts";
import type { Exchange, Phase } from "../../../src/policy/exchange.ts";
import { makeExchange, type ExchangeOptions } from "../support/exchange.ts";
import { failingCounter, MemoryCounter } from "../support/memory-counter.ts";

function evaluate(source: string, exchange: Exchange, phase: Phase = exchange.response ? "outbound" : "inbound") {
  const compiled = compileExpression(source, phase);
  if (!compiled.ok) throw new Error(`does not compile: ${compiled.message}`);
  return compiled.expression.evaluate(exchange);
}

/** True when `source` evaluates to true on an exchange built from `options`. */
function holds(source: string, options: ExchangeOptions = {}): boolean | { error: string } {
  return evaluate(source, makeExchange(options));
}

function compileError(source: string, phase: Phase = "inbound"): string | undefined {
  const compiled = compileExpression(source, phase);
  return compiled.ok ? undefined : compiled.message;
}

describe("request variables", () => {
  it("req.method is the request method", () => {
    expect(holds("req.method == 'POST'", { method: "POST" })).toBe(true);
    expect(holds("req.method == 'POST'", { method: "GET" })).toBe(false);
  });

  it("req.host is the host name without port", () => {
    expect(holds("req.host == 'api.example.test'", { url: "https://api.example.test:8443/x" })).toBe(true);
  });

  it("req.url.path is the path without the query", () => {
    expect(holds("req.url.path == '/v1/users'", { url: "https://a.test/v1/users?limit=5" })).toBe(true);
    expect(holds("req.url.path.startsWith('/v1/')", { url: "https://a.test/v1/users" })).toBe(true);
  });

  it("req.url.query is the raw query string without '?', empty when there is none", () => {
    expect(holds("req.url.query == 'limit=5&a=b%20c'", { url: "https://a.test/x?limit=5&a=b%20c" })).toBe(true);
    expect(holds("req.url.query == ''", { url: "https://a.test/x" })).toBe(true);
  });

  it("req.headers maps lower-case names to lists of values", () => {
    const options = { headers: { "X-Api-Key": "k1", Accept: "text/html" } };
    expect(holds("req.headers['x-api-key'] == ['k1']", options)).toBe(true);
    expect(holds("'accept' in req.headers && !('Accept' in req.headers)", options)).toBe(true);
    expect(holds("req.headers.exists(name, name == 'x-api-key')", options)).toBe(true);
  });

  it("indexing req.headers with a missing name is an evaluation error, not false", () => {
    expect(holds("req.headers['x-missing'] == ['a']")).toEqual({ error: expect.any(String) });
  });

  it("conn.client_ip is the client address", () => {
    expect(holds("conn.client_ip == '198.51.100.4'", { clientIp: "198.51.100.4" })).toBe(true);
  });
});

describe("request macros", () => {
  it("getReqHeader matches the name case-insensitively and returns a list, empty when absent", () => {
    const options = { headers: { "x-api-key": "k1" } };
    expect(holds("getReqHeader('X-Api-Key') == ['k1']", options)).toBe(true);
    expect(holds("getReqHeader('X-Other') == []", options)).toBe(true);
  });

  it("hasReqHeader says whether the header is present", () => {
    expect(holds("hasReqHeader('Authorization')", { headers: { authorization: "Bearer t" } })).toBe(true);
    expect(holds("hasReqHeader('Authorization')")).toBe(false);
  });

  it("getQueryParam returns every value of a repeated parameter, decoded", () => {
    expect(holds("getQueryParam('tag') == ['a b', 'c']", { url: "https://a.test/?tag=a%20b&tag=c" })).toBe(true);
    expect(holds("getQueryParam('none') == []", { url: "https://a.test/?tag=a" })).toBe(true);
  });

  it("hasQueryParam says whether the parameter is present, also when empty", () => {
    expect(holds("hasQueryParam('debug')", { url: "https://a.test/?debug" })).toBe(true);
    expect(holds("hasQueryParam('debug')", { url: "https://a.test/?verbose=1" })).toBe(false);
  });
});

describe("response variables and macros (outbound)", () => {
  const response = {
    status: 503,
    headers: [
      ["content-type", "text/plain"],
      ["set-cookie", "a=1; Path=/"],
      ["set-cookie", "b=2, c"],
    ] as [string, string][],
  };

  it("res.status_code is the upstream status as an integer", () => {
    expect(holds("res.status_code == 503 && res.status_code >= 500", { response })).toBe(true);
  });

  it("res.headers maps lower-case names to lists, one element per set-cookie", () => {
    expect(holds("res.headers['content-type'] == ['text/plain']", { response })).toBe(true);
    expect(holds("res.headers['set-cookie'] == ['a=1; Path=/', 'b=2, c']", { response })).toBe(true);
  });

  it("getResHeader and hasResHeader read response headers case-insensitively", () => {
    expect(holds("getResHeader('Content-Type') == ['text/plain']", { response })).toBe(true);
    expect(holds("getResHeader('Set-Cookie') == ['a=1; Path=/', 'b=2, c']", { response })).toBe(true);
    expect(holds("hasResHeader('Content-Type') && !hasResHeader('X-Missing')", { response })).toBe(true);
  });

  it("outbound expressions still see the request", () => {
    expect(holds("req.method == 'DELETE' && res.status_code == 503", { method: "DELETE", response })).toBe(true);
  });
});

describe("action result variables", () => {
  it("before any rate-limit ran, bucket_key and error are empty and limited is false", () => {
    const exchange = makeExchange();
    expect(evaluate("actions.svc.rate_limit.bucket_key == ''", exchange)).toBe(true);
    expect(evaluate("actions.svc.rate_limit.limited == false", exchange)).toBe(true);
    expect(evaluate("actions.svc.rate_limit.error.code == '' && actions.svc.rate_limit.error.message == ''", exchange)).toBe(true);
  });

  const limit = [
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config:",
    "          capacity: 1",
    "          rate: 60s",
    "          bucket_key: [conn.client_ip, \"req.headers['x-api-key']\"]",
  ].join("\n");

  it("after a rate-limit admitted the request, bucket_key holds its key values and limited is false", async () => {
    const loaded = loadPolicy(limit, "policies/limit.yaml");
    if (!loaded.ok) throw new Error("policy does not load");
    const exchange = makeExchange({ clientIp: "10.0.0.1", headers: { "x-api-key": "k1" } });
    await runPhase(loaded.policy.inbound, exchange, { counter: new MemoryCounter(1_700_000_000_000) });
    expect(evaluate("actions.svc.rate_limit.bucket_key == '10.0.0.1:k1'", exchange)).toBe(true);
    expect(evaluate("!actions.svc.rate_limit.limited && actions.svc.rate_limit.error.code == ''", exchange)).toBe(true);
  });

  it("after a rate-limit rejected the request, limited is true", async () => {
    const loaded = loadPolicy(limit, "policies/limit.yaml");
    if (!loaded.ok) throw new Error("policy does not load");
    const counter = new MemoryCounter(1_700_000_000_000);
    await runPhase(loaded.policy.inbound, makeExchange(), { counter });
    const second = makeExchange();
    await runPhase(loaded.policy.inbound, second, { counter });
    expect(evaluate("actions.svc.rate_limit.limited", second)).toBe(true);
  });

  it("after counting failed, error.code and error.message say why", async () => {
    const loaded = loadPolicy(limit, "policies/limit.yaml");
    if (!loaded.ok) throw new Error("policy does not load");
    const exchange = makeExchange();
    await runPhase(loaded.policy.inbound, exchange, { counter: failingCounter("limiter_timeout", "no answer in 50ms") });
    expect(evaluate("actions.svc.rate_limit.error.code == 'limiter_timeout'", exchange)).toBe(true);
    expect(evaluate("actions.svc.rate_limit.error.message == 'no answer in 50ms'", exchange)).toBe(true);
    expect(evaluate("actions.svc.rate_limit.limited == false", exchange)).toBe(true);
  });
});

describe("inCidrRange and inCidrRanges", () => {
  it.each([
    ["10.1.2.3", "10.0.0.0/8", true],
    ["11.1.2.3", "10.0.0.0/8", false],
    ["192.168.1.1", "192.168.1.1/32", true],
    ["192.168.1.2", "192.168.1.1/32", false],
    ["8.8.8.8", "0.0.0.0/0", true],
    ["2001:db8::1", "2001:db8::/32", true],
    ["2001:db9::1", "2001:db8::/32", false],
    ["::1", "::1/128", true],
    ["::ffff:10.1.2.3", "10.0.0.0/8", true],
    ["::ffff:11.1.2.3", "10.0.0.0/8", false],
    ["10.1.2.3", "2001:db8::/32", false],
    ["2001:db8::1", "10.0.0.0/8", false],
    ["not-an-ip", "10.0.0.0/8", false],
    ["", "10.0.0.0/8", false],
    ["10.1.2.3", "10.0.0.0", false],
    ["10.1.2.3", "10.0.0.0/33", false],
    ["10.1.2.3", "garbage", false],
  ])("%s in %s is %s", (ip, cidr, expected) => {
    expect(ipInCidr(ip, cidr)).toBe(expected);
    expect(holds(`inCidrRange(conn.client_ip, '${cidr}')`, { clientIp: ip })).toBe(expected);
  });

  it("inCidrRanges is true when any range contains the address, skipping ranges that do not parse", () => {
    expect(holds("inCidrRanges(conn.client_ip, ['192.168.0.0/16', 'garbage', '10.0.0.0/8'])", { clientIp: "10.9.9.9" })).toBe(true);
    expect(holds("inCidrRanges(conn.client_ip, ['192.168.0.0/16', '2001:db8::/32'])", { clientIp: "10.9.9.9" })).toBe(false);
    expect(holds("inCidrRanges(conn.client_ip, ['2001:db8::/32'])", { clientIp: "2001:db8:0:1::5" })).toBe(true);
    expect(holds("inCidrRanges(conn.client_ip, ['10.0.0.0/8'])", { clientIp: "::ffff:10.0.0.1" })).toBe(true);
    expect(holds("inCidrRanges(conn.client_ip, [])", { clientIp: "10.9.9.9" })).toBe(false);
  });
});

describe("evaluation", () => {
  it("a result that is not a bool is refused at load, or an evaluation error when only the request can tell", () => {
    expect(compileError("req.method")).toBe("invalid CEL: an entry expression must be a bool, and this one is string");
    expect(holds("[1, 'a'][0]")).toEqual({ error: "expression did not evaluate to a bool" });
  });

  it("the CEL standard library and the strings extension are available", () => {
    expect(holds("req.url.path.split('/').size() == 3 && req.method.lowerAscii() == 'get'", { url: "https://a.test/a/b" })).toBe(true);
    expect(holds("[1, 2, 3].all(n, n > 0) && req.url.path.matches('^/a')", { url: "https://a.test/a/b" })).toBe(true);
  });

  it("comprehension variables are locals, also when they shadow a variable name", () => {
    expect(compileError("[1, 2].exists(x, x == 2)")).toBeUndefined();
    expect(compileError("[{'path': 1}].exists(req, req.path == 1)")).toBeUndefined();
  });
});

describe("compile-time checks", () => {
  it.each([
    ["req.method ==", "inbound", "invalid CEL: 1:12: found = but expecting end of input"],
    ["request.method == 'GET'", "inbound", "invalid CEL: unknown variable 'request' (expected req, conn, actions, endpoint, time, vars)"],
    ["client.ip == ''", "outbound", "invalid CEL: unknown variable 'client' (expected req, conn, actions, res, endpoint, time, vars)"],
    ["res.status_code == 200", "inbound", "invalid CEL: res is only available in outbound expressions"],
    ["getResHeader('x') == []", "inbound", "invalid CEL: getResHeader is only available in outbound expressions"],
    ["hasResHeader('x')", "inbound", "invalid CEL: hasResHeader is only available in outbound expressions"],
    ["getHeader('x') == ['y']", "inbound", "invalid CEL: unknown function 'getHeader'"],
    ["inCidrRange(conn.client_ip)", "inbound", "invalid CEL: no overload of function 'inCidrRange' takes 1 argument"],
    ["conn.client_ip.inCidrRange('10.0.0.0/8')", "inbound", "invalid CEL: no overload of method 'inCidrRange' takes 1 argument"],
    ["req.path == '/'", "inbound", "invalid CEL: unknown field 'path' of req"],
    ["req.url.pathname == '/'", "inbound", "invalid CEL: unknown field 'pathname' of req.url"],
    ["conn.ip == ''", "inbound", "invalid CEL: unknown field 'ip' of conn"],
    ["res.status == 200", "outbound", "invalid CEL: unknown field 'status' of res"],
    ["actions.svc.ratelimit.limited", "inbound", "invalid CEL: unknown field 'ratelimit' of actions.svc"],
    ["req.method.name == 'GET'", "inbound", "invalid CEL: req.method has no field 'name'"],
  ] as const)("%s (%s) is refused: %s", (source, phase, message) => {
    expect(compileError(source, phase)).toBe(message);
  });

  it("header maps take any name as a field", () => {
    expect(compileError("has(req.headers.authorization)")).toBeUndefined();
    expect(compileError("res.headers.server == ['x']", "outbound")).toBeUndefined();
  });
});
