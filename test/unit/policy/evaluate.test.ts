/** Running a phase of a traffic policy: order, gating, the actions, and failing open when counting fails. */

import { describe, expect, it } from "vitest";
import { loadPolicy, type CompiledPolicy } from "../../../src/policy/compile.ts";
import { runPhase, type EvaluationLog } from "../../../src/policy/evaluate.ts";
import type { ActionServices, Exchange, RateLimitCounter } from "../../../src/policy/exchange.ts";
import { makeExchange } from "../support/exchange.ts";
import { failingCounter, MemoryCounter } from "../support/memory-counter.ts";

/** Aligned to the 1s sub-windows of a 60s window. */
const T0 = 1_700_000_000_000;

function policy(...lines: string[]): CompiledPolicy {
  const loaded = loadPolicy(lines.join("\n"), "policies/test.yaml");
  if (!loaded.ok) throw new Error(loaded.issues.map((issue) => issue.message).join("\n"));
  return loaded.policy;
}

/** An EvaluationLog that keeps what it was told. */
function recordingLog(): EvaluationLog & { errors: string[] } {
  const errors: string[] = [];
  return { errors, expressionError: (entry, source, message) => errors.push(`${entry.name ?? "?"}: ${source}: ${message}`) };
}

const services = (counter: RateLimitCounter = new MemoryCounter(T0)): ActionServices => ({ counter });

async function inbound(compiled: CompiledPolicy, exchange: Exchange, counter?: RateLimitCounter, log = recordingLog()) {
  return runPhase(compiled.inbound, exchange, services(counter), log);
}

async function bodyOf(response: Response | undefined): Promise<Record<string, unknown>> {
  if (!response) throw new Error("expected a response");
  return (await response.json()) as Record<string, unknown>;
}

const perClient = (capacity: number, extra: string[] = []) =>
  policy(
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config:",
    "          name: per-client",
    `          capacity: ${capacity}`,
    "          rate: 60s",
    ...extra,
  );

describe("order", () => {
  it("entries run in order and every action of a matching entry runs in order", async () => {
    const compiled = policy(
      "inbound:",
      "  - actions:",
      "      - type: add-headers",
      "        config: { headers: { x-trace: first } }",
      "      - type: add-headers",
      "        config: { headers: { x-trace: second } }",
      "  - actions:",
      "      - type: add-headers",
      "        config: { headers: { x-trace: third } }",
      "      - type: remove-headers",
      "        config: { headers: [x-drop] }",
    );
    const exchange = makeExchange({ headers: { "x-drop": "1" } });
    expect(await inbound(compiled, exchange)).toBeUndefined();
    expect(exchange.request.headers.get("x-trace")).toBe("first, second, third");
    expect(exchange.request.headers.has("x-drop")).toBe(false);
  });

  it("a Response ends the phase: later actions and entries do not run", async () => {
    const compiled = policy(
      "inbound:",
      "  - actions:",
      "      - type: add-headers",
      "        config: { headers: { x-before: yes } }",
      "      - type: deny",
      "      - type: add-headers",
      "        config: { headers: { x-same-entry: yes } }",
      "  - actions:",
      "      - type: add-headers",
      "        config: { headers: { x-next-entry: yes } }",
    );
    const exchange = makeExchange();
    const response = await inbound(compiled, exchange);
    expect(response?.status).toBe(403);
    expect(exchange.request.headers.get("x-before")).toBe("yes");
    expect(exchange.request.headers.has("x-same-entry")).toBe(false);
    expect(exchange.request.headers.has("x-next-entry")).toBe(false);
  });

  it("an empty phase lets the request through untouched", async () => {
    const exchange = makeExchange({ headers: { a: "1" } });
    expect(await inbound(policy("inbound: []"), exchange)).toBeUndefined();
    expect([...exchange.request.headers]).toEqual([["a", "1"]]);
  });
});

describe("expressions", () => {
  const gated = (...expressions: string[]) =>
    policy(
      "inbound:",
      "  - name: gated",
      ...(expressions.length > 0 ? ["    expressions:"] : []),
      ...expressions.map((expression) => `      - ${JSON.stringify(expression)}`),
      "    actions:",
      "      - type: deny",
    );

  it("an entry runs when all of its expressions are true", async () => {
    const response = await inbound(gated("req.method == 'POST'", "req.url.path == '/admin'"), makeExchange({ method: "POST", url: "https://a.test/admin" }));
    expect(response?.status).toBe(403);
  });

  it("an entry is skipped when any expression is false", async () => {
    const compiled = gated("req.method == 'POST'", "req.url.path == '/admin'");
    expect(await inbound(compiled, makeExchange({ method: "GET", url: "https://a.test/admin" }))).toBeUndefined();
    expect(await inbound(compiled, makeExchange({ method: "POST", url: "https://a.test/other" }))).toBeUndefined();
  });

  it("an expression that fails to evaluate counts as false, and the failure is logged", async () => {
    const log = recordingLog();
    const response = await inbound(gated("req.headers['x-missing'][0] == 'a'"), makeExchange(), undefined, log);
    expect(response).toBeUndefined();
    expect(log.errors).toEqual([expect.stringMatching(/^gated: req\.headers\['x-missing'\]\[0\] == 'a': .+/)]);
  });

  it("an entry without expressions always runs", async () => {
    expect((await inbound(gated(), makeExchange()))?.status).toBe(403);
  });
});

describe("rate-limit", () => {
  it("admits capacity requests, then answers 429 with retry-after and the ERR_SVC_226 envelope", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = perClient(2);
    expect(await inbound(compiled, makeExchange(), counter)).toBeUndefined();
    expect(await inbound(compiled, makeExchange(), counter)).toBeUndefined();
    const response = await inbound(compiled, makeExchange(), counter);
    expect(response?.status).toBe(429);
    expect(response?.headers.get("retry-after")).toBe("60");
    expect(response?.headers.get("content-type")).toMatch(/^application\/json/);
    expect(response?.headers.get("x-operation-id")).toMatch(/^op_/);
    expect(await bodyOf(response)).toEqual({
      error_code: "ERR_SVC_226",
      status_code: 429,
      msg: "Rate limit exceeded: more than 2 requests in 60s. Retry after 60s.",
      details: { rate_limit: "per-client", retry_after: 60, operation_id: response?.headers.get("x-operation-id") },
    });
  });

  it("the 429 envelope is valid JSON whatever the action's name holds (quotes, backslashes, line separators)", async () => {
    const name = 'a "quoted" \\ name\u2028with\ttabs and ünïcode';
    const compiled = policy(
      "inbound:",
      "  - actions:",
      "      - type: rate-limit",
      "        config:",
      `          name: ${JSON.stringify(name)}`,
      "          capacity: 1",
      "          rate: 10m",
    );
    const counter = new MemoryCounter(T0);
    await inbound(compiled, makeExchange(), counter);
    const response = await inbound(compiled, makeExchange(), counter);
    const retryAfter = Number(response?.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(590);
    expect(await bodyOf(response)).toEqual({
      error_code: "ERR_SVC_226",
      status_code: 429,
      msg: `Rate limit exceeded: more than 1 requests in 10m. Retry after ${retryAfter}s.`,
      details: { rate_limit: name, retry_after: retryAfter, operation_id: response?.headers.get("x-operation-id") },
    });
  });

  it("a bucket at capacity answers 429 with retry-after 42", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = perClient(1);
    await inbound(compiled, makeExchange(), counter);
    counter.now = T0 + 18_500; // the first admission counts until T0 + 60s: 41.5s from now
    const response = await inbound(compiled, makeExchange(), counter);
    expect(response?.headers.get("retry-after")).toBe("42");
  });

  it("retry-after is never 0", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = perClient(1);
    await inbound(compiled, makeExchange(), counter);
    counter.now = T0 + 59_999;
    const response = await inbound(compiled, makeExchange(), counter);
    expect(response?.headers.get("retry-after")).toBe("1");
  });

  it("the request after retry-after seconds is admitted", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = perClient(1);
    await inbound(compiled, makeExchange(), counter);
    counter.now = T0 + 30_250;
    const rejected = await inbound(compiled, makeExchange(), counter);
    counter.now += Number(rejected?.headers.get("retry-after")) * 1000;
    expect(await inbound(compiled, makeExchange(), counter)).toBeUndefined();
  });

  it("each client ip has its own bucket by default, named by the action's position when the config has no name", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = policy("inbound:", "  - actions:", "      - type: rate-limit", "        config: { capacity: 1, rate: 60s }");
    expect(await inbound(compiled, makeExchange({ clientIp: "10.0.0.1" }), counter)).toBeUndefined();
    expect(await inbound(compiled, makeExchange({ clientIp: "10.0.0.2" }), counter)).toBeUndefined();
    expect((await inbound(compiled, makeExchange({ clientIp: "10.0.0.1" }), counter))?.status).toBe(429);
    expect(counter.calls[0]).toEqual({ scope: "edge/route", action: "inbound[0].actions[0]", key: '["10.0.0.1"]' });
  });

  it("the bucket is named by every bucket_key value, read from the request", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = perClient(1, [
      "          bucket_key:",
      "            - req.host",
      "            - \"req.headers['x-api-key']\"",
      "            - getReqHeader('X-Tenant')",
    ]);
    const exchange = makeExchange({ url: "https://api.example.test/", headers: { "x-api-key": "k1", "x-tenant": "t1" } });
    await inbound(compiled, exchange, counter);
    expect(counter.calls[0].key).toBe('["api.example.test","k1","t1"]');
    expect(exchange.vars.rate_limit.bucket_key).toBe("api.example.test:k1:t1");
    // other key values, other bucket
    expect(await inbound(compiled, makeExchange({ headers: { "x-api-key": "k2", "x-tenant": "t1" } }), counter)).toBeUndefined();
  });

  it("key values that join to the same text still name different buckets", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = perClient(1, ["          bucket_key: [\"req.headers['a']\", \"req.headers['b']\"]"]);
    expect(await inbound(compiled, makeExchange({ headers: { a: "x:y", b: "z" } }), counter)).toBeUndefined();
    expect(await inbound(compiled, makeExchange({ headers: { a: "x", b: "y:z" } }), counter)).toBeUndefined();
  });

  it("differently named rate-limit actions and different scopes count separately", async () => {
    const counter = new MemoryCounter(T0);
    const two = policy(
      "inbound:",
      "  - actions:",
      "      - type: rate-limit",
      "        config: { name: a, capacity: 1, rate: 60s }",
      "      - type: rate-limit",
      "        config: { name: b, capacity: 2, rate: 60s }",
    );
    expect(await inbound(two, makeExchange({ scope: "edge/one" }), counter)).toBeUndefined();
    expect(await inbound(two, makeExchange({ scope: "edge/two" }), counter)).toBeUndefined();
    const limited = await inbound(two, makeExchange({ scope: "edge/one" }), counter);
    expect(await bodyOf(limited)).toMatchObject({ details: { rate_limit: "a" } });
    expect(counter.calls.map((call) => `${call.scope} ${call.action}`)).toEqual(["edge/one a", "edge/one b", "edge/two a", "edge/two b", "edge/one a"]);
  });

  it("sets limited and bucket_key for later entries, last execution only", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = policy(
      "inbound:",
      "  - actions:",
      "      - type: rate-limit",
      "        config: { name: loose, capacity: 5, rate: 60s }",
      "  - expressions: [\"!actions.svc.rate_limit.limited && actions.svc.rate_limit.bucket_key == '203.0.113.7'\"]",
      "    actions:",
      "      - type: add-headers",
      "        config: { headers: { x-counted: yes } }",
    );
    const exchange = makeExchange();
    expect(await inbound(compiled, exchange, counter)).toBeUndefined();
    expect(exchange.request.headers.get("x-counted")).toBe("yes");
    expect(exchange.vars.rate_limit).toEqual({ bucket_key: "203.0.113.7", limited: false, error: { code: "", message: "" } });
  });

  it("outbound, an over-limit response is replaced by the 429", async () => {
    const counter = new MemoryCounter(T0);
    const compiled = policy("outbound:", "  - actions:", "      - type: rate-limit", "        config: { capacity: 1, rate: 60s }");
    const first = makeExchange({ response: { status: 200 } });
    expect(await runPhase(compiled.outbound, first, services(counter))).toBeUndefined();
    const second = await runPhase(compiled.outbound, makeExchange({ response: { status: 200 } }), services(counter));
    expect(second?.status).toBe(429);
    expect(counter.calls[0].action).toBe("outbound[0].actions[0]");
  });
});

describe("failing open", () => {
  const failClosed = policy(
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config: { capacity: 10, rate: 60s }",
    "  - expressions: [\"actions.svc.rate_limit.error.code != ''\"]",
    "    actions:",
    "      - type: deny",
    "        config: { status_code: 503 }",
  );

  it("when counting fails the request proceeds and the error variables say why", async () => {
    const compiled = perClient(1);
    const exchange = makeExchange();
    expect(await inbound(compiled, exchange, failingCounter("limiter_unavailable", "the limiter did not answer in 50ms"))).toBeUndefined();
    expect(exchange.vars.rate_limit).toEqual({
      bucket_key: "203.0.113.7",
      limited: false,
      error: { code: "limiter_unavailable", message: "the limiter did not answer in 50ms" },
    });
  });

  it("a later entry can fail closed on the error code", async () => {
    const response = await inbound(failClosed, makeExchange(), failingCounter("limiter_unavailable", "down"));
    expect(response?.status).toBe(503);
    expect(await bodyOf(response)).toMatchObject({ error_code: "ERR_SVC_300" });
  });

  it("the fail-closed entry does not fire when counting works", async () => {
    expect(await inbound(failClosed, makeExchange(), new MemoryCounter(T0))).toBeUndefined();
  });

  it("a successful count clears the error of an earlier failed one", async () => {
    const compiled = perClient(5);
    const exchange = makeExchange();
    await inbound(compiled, exchange, failingCounter("limiter_unavailable", "down"));
    await inbound(compiled, exchange, new MemoryCounter(T0));
    expect(exchange.vars.rate_limit.error).toEqual({ code: "", message: "" });
  });
});

describe("deny and custom-response", () => {
  it("deny answers 403 with the ERR_SVC_300 envelope naming the action", async () => {
    const response = await inbound(policy("inbound:", "  - actions:", "      - type: deny"), makeExchange());
    expect(response?.status).toBe(403);
    expect(await bodyOf(response)).toEqual({
      error_code: "ERR_SVC_300",
      status_code: 403,
      msg: "The request was denied by the traffic policy.",
      details: { action: "inbound[0].actions[0]", operation_id: response?.headers.get("x-operation-id") },
    });
  });

  it("deny answers with its configured status", async () => {
    const response = await inbound(policy("inbound:", "  - actions:", "      - type: deny", "        config: { status_code: 451 }"), makeExchange());
    expect(response?.status).toBe(451);
    expect(await bodyOf(response)).toMatchObject({ status_code: 451 });
  });

  it("custom-response answers with its status, body and headers, text/plain unless told otherwise", async () => {
    const plain = await inbound(
      policy(
        "inbound:",
        "  - actions:",
        "      - type: custom-response",
        "        config: { status_code: 418, body: I am a teapot, headers: { x-brew: tea } }",
      ),
      makeExchange(),
    );
    expect(plain?.status).toBe(418);
    expect(await plain?.text()).toBe("I am a teapot");
    expect(plain?.headers.get("x-brew")).toBe("tea");
    expect(plain?.headers.get("content-type")).toBe("text/plain; charset=utf-8");

    const json = await inbound(
      policy(
        "inbound:",
        "  - actions:",
        "      - type: custom-response",
        "        config: { body: '{\"ok\":true}', headers: { Content-Type: application/json } }",
      ),
      makeExchange(),
    );
    expect(json?.status).toBe(200);
    expect(json?.headers.get("content-type")).toBe("application/json");
    expect(await json?.json()).toEqual({ ok: true });
  });

  it("custom-response without a body sends none", async () => {
    const response = await inbound(policy("inbound:", "  - actions:", "      - type: custom-response", "        config: { status_code: 204 }"), makeExchange());
    expect(response?.status).toBe(204);
    expect(response?.body).toBeNull();
    expect(response?.headers.has("content-type")).toBe(false);
  });
});

describe("add-headers and remove-headers", () => {
  it("inbound, they change the request headers sent upstream", async () => {
    const compiled = policy(
      "inbound:",
      "  - actions:",
      "      - type: add-headers",
      "        config: { headers: { x-from-gateway: tollgate, X-Forwarded-Tag: edge } }",
      "      - type: remove-headers",
      "        config: { headers: [Cookie, x-internal] }",
    );
    const exchange = makeExchange({ headers: { cookie: "s=1", "X-Internal": "secret", "x-forwarded-tag": "client" }, response: undefined });
    await inbound(compiled, exchange);
    expect(Object.fromEntries(exchange.request.headers)).toEqual({ "x-from-gateway": "tollgate", "x-forwarded-tag": "client, edge" });
  });

  it("outbound, they change the response headers sent to the client", async () => {
    const compiled = policy(
      "outbound:",
      "  - actions:",
      "      - type: add-headers",
      "        config: { headers: { x-served-by: tollgate } }",
      "      - type: remove-headers",
      "        config: { headers: [server] }",
    );
    const exchange = makeExchange({ headers: { server: "request-side" }, response: { status: 200, headers: { server: "nginx", etag: "e1" } } });
    expect(await runPhase(compiled.outbound, exchange, services())).toBeUndefined();
    expect(Object.fromEntries(exchange.response!.headers)).toEqual({ etag: "e1", "x-served-by": "tollgate" });
    expect(exchange.request.headers.get("server")).toBe("request-side");
  });
});
