/** Simulating a candidate policy: the engine's own decisions over a request list, at a simulated clock, against fresh buckets. */

import { describe, expect, it, vi } from "vitest";
import {
  MAX_SIMULATED_BODY_CHARS,
  MAX_SIMULATED_HEADER_CHARS,
  MAX_SIMULATED_HEADERS,
  MAX_SIMULATED_POLICY_CHARS,
  MAX_SIMULATED_POLICY_NESTING,
  MAX_SIMULATED_REQUESTS,
  MAX_SIMULATION_ACTIONS,
  MAX_SIMULATION_CEL_WORK,
  MAX_SIMULATION_EXPRESSIONS,
  simulatePolicy,
  type SimulationResult,
} from "../../../../src/policy/simulate/index.ts";

const T0 = Date.parse("2025-03-03T10:00:00Z");
const now = () => T0;

const perClient = (capacity: number, extra = "") =>
  [
    "inbound:",
    "  - name: per client",
    "    expressions: [\"req.method != 'OPTIONS'\"]",
    "    actions:",
    "      - type: rate-limit",
    "        config:",
    "          name: per-client",
    `          capacity: ${capacity}`,
    "          rate: 60s",
    "          ratelimit_headers: true",
    extra,
  ].join("\n");

const get = (at_ms: number, client_ip = "203.0.113.7", extra: Record<string, unknown> = {}) => ({
  method: "GET",
  url: "https://api.example.com/items",
  client_ip,
  at_ms,
  ...extra,
});

function decided(result: SimulationResult) {
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.decisions;
}

describe("simulating a candidate policy", () => {
  it("a bucket at capacity 5 admits five requests and answers the next two 429 with retry-after 60", async () => {
    const decisions = decided(await simulatePolicy({ policy: perClient(5), requests: [0, 1, 2, 3, 4, 5, 6].map((at) => get(at)) }, { now }));
    expect(decisions.map((d) => d.status)).toEqual([null, null, null, null, null, 429, 429]);
    expect(decisions[0]).toMatchObject({ matched: [{ phase: "inbound", entry: 0, name: "per client" }], answered_by: "upstream" });
    expect(decisions[0]!.actions).toEqual([
      {
        phase: "inbound",
        entry: 0,
        action: 0,
        type: "rate-limit",
        outcome: "allowed",
        rate_limit: { name: "per-client", bucket_key: "203.0.113.7", remaining: 4, retry_after: 0, capacity: 5, window_s: 60 },
      },
    ]);
    expect(decisions[5]).toMatchObject({
      answered_by: "inbound",
      actions: [{ outcome: "limited", status: 429, rate_limit: { retry_after: 60, remaining: 0 } }],
      headers: { "retry-after": "60", ratelimit: '"per-client";r=0;t=60', "ratelimit-policy": '"per-client";q=5;w=60' },
    });
  });

  it("time offsets make the sliding window exact: the first admission leaves it a full window later", async () => {
    const requests = [get(0), get(1_000), get(30_000), get(59_999), get(60_000)];
    const decisions = decided(await simulatePolicy({ policy: perClient(2), requests }, { now }));
    expect(decisions.map((d) => d.actions[0]!.outcome)).toEqual(["allowed", "allowed", "limited", "limited", "allowed"]);
    expect(decisions[2]!.actions[0]!.rate_limit!.retry_after).toBe(30);
    expect(decisions[3]!.actions[0]!.rate_limit!.retry_after).toBe(1);
  });

  it("an entry whose expressions are false does not match; buckets are per client address", async () => {
    const requests = [get(0), { ...get(1), method: "OPTIONS" }, get(2, "198.51.100.1")];
    const decisions = decided(await simulatePolicy({ policy: perClient(1), requests }, { now }));
    expect(decisions.map((d) => d.matched.length)).toEqual([1, 0, 1]);
    expect(decisions.map((d) => d.actions[0]?.outcome)).toEqual(["allowed", undefined, "allowed"]);
  });

  it("a month window is as long as the simulated month, whatever month the wall clock is in", async () => {
    const policy = "inbound:\n  - actions: [{ type: rate-limit, config: { name: m, windows: [{ capacity: 1, period: month }], ratelimit_headers: true } }]";
    const month = async (start: string) => {
      const [decision] = decided(await simulatePolicy({ policy, start, requests: [get(0)] }, { now }));
      return [decision!.headers["ratelimit-policy"], decision!.actions[0]!.rate_limit!.window_s];
    };
    // One of the two differs from any wall-clock month: both are right only if the simulated time is read.
    expect(await month("2025-02-10T00:00:00Z")).toEqual(['"m";q=1;w=2419200', 2_419_200]);
    expect(await month("2025-01-10T00:00:00Z")).toEqual(['"m";q=1;w=2678400', 2_678_400]);
  });

  it("the response phase runs on the response given, and a settle charges what the body reports", async () => {
    const policy = [
      "inbound:",
      "  - actions:",
      "      - type: rate-limit",
      "        config: { name: tokens, windows: [{ capacity: 100, rate: 60s }], cost: 10, settle_cost: 'int(res.body.used)', bucket_key: [\"req.headers['x-key']\"] }",
      "outbound:",
      "  - expressions: ['res.status_code >= 500']",
      "    actions:",
      "      - type: custom-response",
      "        config: { status_code: 503, body: down }",
    ].join("\n");
    const response = (used: number, status = 200) => ({ status, headers: { "content-type": "application/json" }, body: JSON.stringify({ used }) });
    const requests = [
      get(0, "", { headers: { "x-key": "k" }, response: response(80) }),
      get(1, "", { headers: { "x-key": "k" }, response: response(15, 502) }),
      get(2, "", { headers: { "x-key": "k" } }),
    ];
    const decisions = decided(await simulatePolicy({ policy, requests }, { now }));
    expect(decisions.map((d) => [d.status, d.answered_by])).toEqual([
      [200, "upstream"],
      [503, "outbound"],
      [429, "inbound"],
    ]);
    // 80 settled, then 10 reserved and settled to 15: 95 counted, so a cost of 10 no longer fits in 100.
    expect(decisions[2]!.actions[0]).toMatchObject({ outcome: "limited", rate_limit: { remaining: 0 } });
    expect(decisions[1]!.actions.map((a) => [a.type, a.outcome])).toEqual([
      ["rate-limit", "allowed"],
      ["custom-response", "answered"],
    ]);
  });

  it("a response body is read once for every settle that reads it, as the gateway reads it", async () => {
    const actions = Array.from(
      { length: 16 },
      (_, i) => `      - { type: rate-limit, config: { name: t${i}, capacity: 100, rate: 60s, cost: 10, settle_cost: 'int(res.body.used)' } }`,
    );
    const policy = ["inbound:", "  - actions:", ...actions].join("\n");
    const body = JSON.stringify({ used: 30, padding: "p".repeat(1000) });
    const response = { status: 200, headers: { "content-type": "application/json" }, body };
    const parse = vi.spyOn(JSON, "parse");
    const decisions = decided(await simulatePolicy({ policy, requests: [get(0, "", { response }), get(1, "")] }, { now }));
    expect(parse.mock.calls.filter(([text]) => text === body)).toHaveLength(1);
    // Every bucket settled to 30: the next request finds 70 of 100 in each.
    expect(decisions[1]!.actions.map((action) => action.rate_limit?.remaining)).toEqual(actions.map(() => 60));
  });

  it("actions that would reach outside are not run, say so, and the request goes on", async () => {
    const policy = ["inbound:", "  - actions:", "      - type: forward-internal", "        config: { url: 'https://api.internal' }", "      - type: deny"].join(
      "\n",
    );
    const [decision] = decided(await simulatePolicy({ policy, requests: [get(0)] }, { now }));
    expect(decision!.actions).toEqual([
      { phase: "inbound", entry: 0, action: 0, type: "forward-internal", outcome: "not_simulated", note: expect.stringContaining("not simulated") },
      { phase: "inbound", entry: 0, action: 1, type: "deny", outcome: "denied", status: 403 },
    ]);
    expect(decision!.status).toBe(403);
  });

  it("each action type's definition says how it is traced: JWKS from a URL not run, a shadow denial, a check allowed", async () => {
    const policy = [
      "inbound:",
      "  - actions:",
      "      - type: jwt-validation",
      "        config:",
      "          issuer: { allow_list: [{ value: 'https://issuer.example' }] }",
      "          audience: { allow_list: [{ value: 'api' }] }",
      "          http: { tokens: [{ type: jwt, method: header, name: Authorization, prefix: 'Bearer ' }] }",
      "          jws: { allowed_algorithms: [RS256], keys: { sources: { additional_jkus: ['https://issuer.example/jwks.json'] } } }",
      "      - type: restrict-ips",
      "        config: { enforce: false, allow: ['198.51.100.0/24'] }",
      "      - type: basic-auth",
      "        config: { credentials: ['user:password'] }",
    ].join("\n");
    const authorized = get(0, "203.0.113.7", { headers: { authorization: `Basic ${btoa("user:password")}` } });
    const [decision] = decided(await simulatePolicy({ policy, requests: [authorized] }, { now }));
    expect(decision!.actions).toEqual([
      {
        phase: "inbound",
        entry: 0,
        action: 0,
        type: "jwt-validation",
        outcome: "not_simulated",
        note: "jwt-validation fetches its JWKS from a URL: not simulated",
      },
      { phase: "inbound", entry: 0, action: 1, type: "restrict-ips", outcome: "shadow_denied" },
      { phase: "inbound", entry: 0, action: 2, type: "basic-auth", outcome: "allowed" },
    ]);
  });

  it("an expression that fails to evaluate is reported, and its entry does not match", async () => {
    const policy = ["inbound:", "  - expressions: [\"req.headers['x-missing'][0] == 'a'\"]", "    actions: [{ type: deny }]"].join("\n");
    const [decision] = decided(await simulatePolicy({ policy, requests: [get(0)] }, { now }));
    expect(decision!.matched).toEqual([]);
    expect(decision!.expression_errors).toEqual([
      { phase: "inbound", entry: 0, expression: "req.headers['x-missing'][0] == 'a'", message: expect.any(String) },
    ]);
  });

  it("a policy that does not load comes back located as policy:check says it, with its line", async () => {
    const result = await simulatePolicy({ policy: perClient(5).replace("rate: 60s", "rate: 65s"), requests: [get(0)] }, { now });
    expect(result).toEqual({
      ok: false,
      source: "policy",
      issues: [{ file: "policy", line: 9, path: ["inbound", 0, "actions", 0, "config", "rate"], message: "must be a multiple of 10s" }],
    });
    const yaml = await simulatePolicy({ policy: "inbound: [", requests: [get(0)] }, { now });
    expect(yaml).toMatchObject({ ok: false, source: "policy", issues: [{ file: "policy", line: 1, path: [] }] });
  });

  it("requests out of order are refused at the one that goes back", async () => {
    const result = await simulatePolicy({ policy: perClient(5), requests: [get(10), get(5)] }, { now });
    expect(result).toMatchObject({
      ok: false,
      source: "input",
      issues: [{ path: ["requests", 1, "at_ms"], message: expect.stringMatching(/^must not be before/) }],
    });
  });
});

describe("the bounds of a simulation", () => {
  const refused = async (input: Record<string, unknown>) => {
    const result = await simulatePolicy({ policy: perClient(5), ...input }, { now });
    if (result.ok) throw new Error("expected a refusal");
    return result.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  };

  it(`refuses more than ${MAX_SIMULATED_REQUESTS} requests`, async () => {
    expect(await refused({ requests: Array.from({ length: MAX_SIMULATED_REQUESTS + 1 }, () => get(0)) })).toEqual([
      `requests: exceeds the limit of ${MAX_SIMULATED_REQUESTS} requests per simulation`,
    ]);
  });

  it(`refuses more than ${MAX_SIMULATED_HEADERS} header fields or ${MAX_SIMULATED_HEADER_CHARS} characters of them`, async () => {
    const many = Object.fromEntries(Array.from({ length: MAX_SIMULATED_HEADERS + 1 }, (_, i) => [`x-h${i}`, "v"]));
    expect(await refused({ requests: [get(0, "", { headers: many })] })).toEqual([
      `requests.0.headers: exceeds the limit of ${MAX_SIMULATED_HEADERS} header fields`,
    ]);
    const long = { "x-big": "a".repeat(MAX_SIMULATED_HEADER_CHARS) };
    expect(await refused({ requests: [get(0, "", { headers: long })] })).toEqual([
      `requests.0.headers: exceeds the limit of ${MAX_SIMULATED_HEADER_CHARS} characters of header names and values`,
    ]);
    expect(await refused({ requests: [get(0, "", { headers: { "x-a": "one\r\ntwo" } })] })).toEqual([
      "requests.0.headers.x-a: must be a header value (text without line breaks, NUL or characters beyond U+00FF) or a list of them",
    ]);
  });

  it(`refuses response bodies past ${MAX_SIMULATED_BODY_CHARS} characters together, at the one that passes`, async () => {
    const response = { status: 200, body: "x".repeat(MAX_SIMULATED_BODY_CHARS / 2) };
    expect(await refused({ requests: [get(0, "", { response }), get(1, "", { response }), get(2, "", { response: { status: 200, body: "y" } })] })).toEqual([
      `requests.2.response.body: takes the response bodies past the limit of ${MAX_SIMULATED_BODY_CHARS} characters per simulation`,
    ]);
  });

  it(`refuses a policy text of more than ${MAX_SIMULATED_POLICY_CHARS} characters before parsing it, and a document past the policy bound`, async () => {
    expect(await refused({ policy: `#${"x".repeat(MAX_SIMULATED_POLICY_CHARS)}`, requests: [get(0)] })).toEqual([
      `policy: must be at most ${MAX_SIMULATED_POLICY_CHARS} characters`,
    ]);
    const big = JSON.stringify({ inbound: [{ actions: [{ type: "custom-response", config: { body: "x".repeat(20_000) } }] }] });
    const result = await simulatePolicy({ policy: big, requests: [get(0)] }, { now });
    expect(result).toMatchObject({ ok: false, source: "policy", issues: [{ message: expect.stringContaining("16384") }] });
  });

  it(`refuses a policy text nesting deeper than ${MAX_SIMULATED_POLICY_NESTING} levels before parsing it`, async () => {
    // 1,000 then 5,000 `{` aborted the process: the YAML parser recursed past the stack (a body of 5 KiB).
    for (const policy of ["{".repeat(1000), "{".repeat(5000), `${"- ".repeat(30_000)}1`, `inbound: ${"[ ']]]' # ]]\n".repeat(65)}`]) {
      expect(await refused({ policy, requests: [get(0)] })).toEqual([`policy: must not nest deeper than ${MAX_SIMULATED_POLICY_NESTING} levels`]);
    }
    // Quoted brackets and comments are not levels; a policy's own nesting is far within.
    const quoted = `${perClient(5)}\n# ${"[".repeat(200)}\n    # "${"{".repeat(200)}"`;
    expect((await simulatePolicy({ policy: quoted, requests: [get(0)] }, { now })).ok).toBe(true);
  });

  it("stops, and says where, once the requests' CEL work passes the simulation's total", async () => {
    // Each request spends about a 32 KiB header's worth of work on every expression reading it.
    const policy = [
      "inbound:",
      ...Array.from({ length: 8 }, (_, i) => `  - expressions: ["getReqHeader('x-big')[0].size() == ${i}"]\n    actions: [{ type: deny }]`),
    ].join("\n");
    const headers = { "x-big": "a".repeat(MAX_SIMULATED_HEADER_CHARS - 10) };
    const result = await simulatePolicy({ policy, requests: Array.from({ length: MAX_SIMULATED_REQUESTS }, (_, i) => get(i, "", { headers })) }, { now });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.stopped?.reason).toContain(`more than ${MAX_SIMULATION_CEL_WORK} units of CEL work`);
    expect(result.decisions.length).toBe(result.stopped!.at);
    expect(result.decisions.length).toBeLessThan(MAX_SIMULATED_REQUESTS);
  });

  it(`stops, and says where, once the requests have run more than ${MAX_SIMULATION_ACTIONS} actions together`, async () => {
    // Sixteen buckets a request from an IPv6 client: each action parses the address for its bucket key, work no
    // CEL budget meters, so without this bound a body within the management API's 64 KiB ran 16,000 of them.
    const policy = [
      "inbound:",
      "  - actions:",
      ...Array.from({ length: 16 }, (_, i) => `      - { type: rate-limit, config: { name: r${i}, capacity: 100000, rate: 60s } }`),
    ].join("\n");
    const requests = Array.from({ length: MAX_SIMULATED_REQUESTS }, (_, i) => get(i, "2001:db8::1"));
    const result = await simulatePolicy({ policy, requests }, { now });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const at = MAX_SIMULATION_ACTIONS / 16 + 1;
    expect(result.stopped).toEqual({
      at,
      reason: `not run from request ${at} on: the requests before it ran more than ${MAX_SIMULATION_ACTIONS} actions together`,
    });
    expect(result.decisions).toHaveLength(at);
  });

  it(`stops, and says where, once the requests have evaluated more than ${MAX_SIMULATION_EXPRESSIONS} expressions together`, async () => {
    // 16 entries of 16 cheap expressions, the last false: 256 evaluations a request that match nothing and
    // spend almost no CEL work, yet cost their evaluation each.
    const expressions = [...Array.from({ length: 15 }, () => `'req.method!="X"'`), `'req.method=="X"'`].join(", ");
    const policy = ["inbound:", ...Array.from({ length: 16 }, () => `  - expressions: [${expressions}]\n    actions: [{ type: deny }]`)].join("\n");
    const requests = Array.from({ length: MAX_SIMULATED_REQUESTS }, (_, i) => get(i));
    const result = await simulatePolicy({ policy, requests }, { now });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const at = MAX_SIMULATION_EXPRESSIONS / 256 + 1;
    expect(result.stopped).toEqual({
      at,
      reason: `not run from request ${at} on: the requests before it evaluated more than ${MAX_SIMULATION_EXPRESSIONS} expressions together`,
    });
    expect(result.decisions.every((decision) => decision.matched.length === 0)).toBe(true);
  });
});
