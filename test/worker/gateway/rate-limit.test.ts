import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../src/env.ts";
import type { IsolateState } from "../../../src/gateway/pipeline.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { BUSY_EPOCH, LEASE_MS } from "../../../src/limiter/bucket-memory.ts";
import { bucketId } from "../../../src/limiter/bucket-id.ts";
import { shardName } from "../../../src/limiter/bucket-shards.ts";
import type { TakeRequest } from "../../../src/limiter/bucket-table.ts";
import type { LeaseDecision } from "../../../src/limiter/sliding-window.ts";
import { gatewayFrom, newIsolate, send, singleEdge } from "./harness.ts";

const limitPolicy = (capacity: number, name = "per-client", bucketKey = "conn.client_ip") => `
inbound:
  - actions:
      - type: rate-limit
        config:
          name: ${name}
          capacity: ${capacity}
          rate: 60s
          bucket_key: ["${bucketKey}"]
`;

function request(path: string, ip = "198.51.100.7", headers: Record<string, string> = {}) {
  return new Request(`http://gw.test${path}`, { headers: { "cf-connecting-ip": ip, ...headers } });
}

async function statuses(routes: ReturnType<typeof singleEdge>, count: number, make: () => Request, overrides: Partial<Env> = {}, isolate?: IsolateState) {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await send(routes, make(), overrides, upstreamHandlers, isolate);
    out.push(response.status);
    await response.body?.cancel();
  }
  return out;
}

describe("rate-limit on a route", () => {
  it("the request after the capacity-th gets 429 with retry-after of about the window, in the error envelope", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": limitPolicy(3) });
    expect(await statuses(routes, 3, () => request("/a"))).toEqual([200, 200, 200]);
    const limited = await send(routes, request("/a"));
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(61);
    expect(await limited.json()).toMatchObject({
      error_code: "ERR_SVC_226",
      status_code: 429,
      details: { rate_limit: "per-client", retry_after: retryAfter },
    });
  });

  it("300 concurrent requests on one key with capacity 100 admit exactly 100", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": limitPolicy(100) });
    const responses = await Promise.all(Array.from({ length: 300 }, () => send(routes, request("/burst"))));
    const counts = { 200: 0, 429: 0 } as Record<number, number>;
    for (const response of responses) {
      counts[response.status] = (counts[response.status] ?? 0) + 1;
      await response.body?.cancel();
    }
    expect(counts).toEqual({ 200: 100, 429: 200 });
  });

  it("buckets are per bucket key value", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, {
      "policies/limit.yaml": limitPolicy(1, "per-key", "req.headers['x-api-key']"),
    });
    expect(await statuses(routes, 2, () => request("/", "1.1.1.1", { "x-api-key": "alpha" }))).toEqual([200, 429]);
    expect(await statuses(routes, 1, () => request("/", "1.1.1.1", { "x-api-key": "beta" }))).toEqual([200]);
  });

  it("routes, differently named actions and ingress instances count on their own", async () => {
    const routes = gatewayFrom({
      "policies/gateway.yaml": `edges:
  - id: EDGE
    hostnames: ["gw.test"]
    routes:
      - { id: one, match: /one, upstream: echo, traffic_policy: a.yaml }
      - { id: two, match: /two, upstream: echo, traffic_policy: a.yaml }
      - { id: three, match: /three, upstream: echo, traffic_policy: b.yaml }
`,
      "policies/a.yaml": limitPolicy(1, "shared-name"),
      "policies/b.yaml": `
inbound:
  - actions:
      - { type: rate-limit, config: { name: first, capacity: 3, rate: 60s } }
  - expressions: ["req.url.path == '/three/second'"]
    actions:
      - { type: rate-limit, config: { name: second, capacity: 1, rate: 60s } }
`,
    });
    expect(await statuses(routes, 2, () => request("/one"))).toEqual([200, 429]);
    expect(await statuses(routes, 2, () => request("/two"))).toEqual([200, 429]);
    // Another ingress instance has its own counts.
    expect(await statuses(routes, 2, () => request("/one"), { INGRESS_ID: "other-colo" })).toEqual([200, 429]);
    // Same client: "second" (capacity 1) fills while "first" (capacity 3) still has room.
    expect(await statuses(routes, 1, () => request("/three/second"))).toEqual([200]);
    const bySecond = await send(routes, request("/three/second"));
    expect(bySecond.status).toBe(429);
    expect(((await bySecond.json()) as { details: { rate_limit: string } }).details.rate_limit).toBe("second");
    expect(await statuses(routes, 1, () => request("/three/x"))).toEqual([200]);
    const byFirst = await send(routes, request("/three/x"));
    expect(((await byFirst.json()) as { details: { rate_limit: string } }).details.rate_limit).toBe("first");
  });

  it("a limited bucket is answered from the isolate's memory, without calling its object", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": limitPolicy(2) });
    const isolate = newIsolate();
    expect(await statuses(routes, 3, () => request("/"), {}, isolate)).toEqual([200, 200, 429]);
    const { objectCalls, cachedRejections } = isolate.buckets.stats;
    const rejections = await statuses(routes, 20, () => request("/"), {}, isolate);
    expect(rejections.every((status) => status === 429)).toBe(true);
    expect(isolate.buckets.stats.objectCalls - objectCalls).toBe(0);
    expect(isolate.buckets.stats.cachedRejections - cachedRejections).toBe(20);
  });

  it("a steady bucket leases admissions to the isolate: fewer object calls than admissions, never over capacity", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": limitPolicy(400) });
    // The isolate's clock moves 25 ms a request whatever the machine's speed: 40 requests per lease period.
    let now = Date.now();
    const isolate = newIsolate(() => now);
    const counts: Record<number, number> = { 200: 0, 429: 0 };
    const sent = 600;
    for (let i = 0; i < sent; i++) {
      const response = await send(routes, request("/steady"), {}, upstreamHandlers, isolate);
      counts[response.status] = (counts[response.status] ?? 0) + 1;
      await response.body?.cancel();
      now += LEASE_MS / 40;
    }
    expect(counts[200] + counts[429]).toBe(sent);
    expect(counts[200]).toBeLessThanOrEqual(400);
    expect(isolate.buckets.stats.leasedAdmissions).toBeGreaterThan(0);
    expect(isolate.buckets.stats.objectCalls).toBeLessThan(counts[200] / 2);
  });

  it("a busy bucket's lease is renewed after the response: once renewing, no request waits for the object, and none is admitted over capacity", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": limitPolicy(5_000) });
    // 100 requests a lease period on the isolate's clock, whatever the machine's speed, starting at a period's
    // start: the demand a lease is sized by is counted per period, so a start late in one gave a first lease
    // sized by a few requests, and waits after it. The objects decide by the same clock (the isolate gives it).
    let now = 2_000_000_000 * LEASE_MS;
    const isolate = newIsolate(() => now);
    let admitted = 0;
    // Until the bucket is busy (BUSY_EPOCH requests in a period) it is decided one by one or from quiet leases
    // (QUIET_LEASE at a time); from its first renewal ahead on, no request waits.
    let waitedBeforeRenewing: number | undefined;
    for (let i = 0; i < 1_000; i++) {
      const response = await send(routes, request("/busy"), { INGRESS_ID: "busy-test" }, upstreamHandlers, isolate);
      if (response.status === 200) admitted++;
      await response.body?.cancel();
      const { objectCalls, renewalsAhead } = isolate.buckets.stats;
      if (waitedBeforeRenewing === undefined && renewalsAhead > 0) waitedBeforeRenewing = objectCalls - renewalsAhead;
      now += LEASE_MS / 100;
    }
    const { objectCalls, renewalsAhead } = isolate.buckets.stats;
    expect(admitted).toBe(1_000);
    expect(renewalsAhead).toBeGreaterThanOrEqual(5);
    // Requests that went to the object and waited: fewer than a busy period's, and none once renewing.
    expect(waitedBeforeRenewing).toBeLessThan(BUSY_EPOCH);
    expect(objectCalls - renewalsAhead).toBe(waitedBeforeRenewing);
    // The object counted every admission, and leased admissions not used yet: never fewer than were admitted.
    const route = routes.match("gw.test", "/busy")!;
    const name = { ingress: "busy-test", scope: `route:${route.edgeId}/${route.id}`, action: "per-client", key: JSON.stringify(["198.51.100.7"]) };
    const id = await bucketId(name);
    const store = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(shardName(name, id)));
    const [counted] = (await store.takeAll(
      [{ id, spec: { capacity: 5_000, windowMs: 60_000 }, want: 1, leaseMs: 0, forRequest: true }],
      now,
    )) as LeaseDecision[];
    expect(5_000 - counted!.remaining - 1).toBeGreaterThanOrEqual(admitted);
  });

  it("outbound, it counts responses and replaces an over-limit response by the 429", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: out.yaml }\n`, {
      "policies/out.yaml": `
outbound:
  - expressions: ["res.status_code == 200"]
    actions:
      - { type: rate-limit, config: { name: ok-responses, capacity: 2, rate: 60s } }
`,
    });
    expect(await statuses(routes, 3, () => request("/"))).toEqual([200, 200, 429]);
  });
});

function failingNamespace(failure: "throw" | "hang"): Env["RATE_LIMITER"] {
  const fail = () => (failure === "throw" ? Promise.reject(new Error("object exploded")) : new Promise(() => {}));
  const stub = { takeAll: fail };
  return { idFromName: (name: string) => env.RATE_LIMITER.idFromName(name), get: () => stub } as unknown as Env["RATE_LIMITER"];
}

describe("when counting fails", () => {
  const failPolicy = `
inbound:
  - actions:
      - { type: rate-limit, config: { name: fragile, capacity: 1, rate: 60s } }
  - expressions: ["actions.svc.rate_limit.error.code != ''"]
    actions:
      - type: add-headers
        config:
          headers: { x-limit-error: "counted nothing" }
`;
  const failClosed = `
inbound:
  - actions:
      - { type: rate-limit, config: { name: fragile, capacity: 1, rate: 60s } }
  - expressions: ["actions.svc.rate_limit.error.code == 'ERR_RATE_LIMIT_TIMEOUT'"]
    actions:
      - { type: deny, config: { status_code: 503 } }
`;

  it("a throwing object lets the request through and the error variables say why", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: fail.yaml }\n`, { "policies/fail.yaml": failPolicy });
    const response = await send(routes, request("/"), { RATE_LIMITER: failingNamespace("throw") });
    expect(response.status).toBe(200);
    const seen = (await response.json()) as { headers: Record<string, string> };
    expect(seen.headers["x-limit-error"]).toBe("counted nothing");
  });

  it("an object that does not answer within the budget lets the request through; a later entry can fail closed", async () => {
    const open = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: fail.yaml }\n`, { "policies/fail.yaml": failPolicy });
    // The object never answers: that the request is answered at all is the budget at work.
    const response = await send(open, request("/"), { RATE_LIMITER: failingNamespace("hang"), RATE_LIMIT_TIMEOUT_MS: "50" });
    expect(response.status).toBe(200);
    const seen = (await response.json()) as { headers: Record<string, string> };
    expect(seen.headers["x-limit-error"]).toBe("counted nothing");

    const closed = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: closed.yaml }\n`, { "policies/closed.yaml": failClosed });
    const denied = await send(closed, request("/"), { RATE_LIMITER: failingNamespace("hang"), RATE_LIMIT_TIMEOUT_MS: "50" });
    expect(denied.status).toBe(503);
    expect(await denied.json()).toMatchObject({ error_code: "ERR_SVC_300", status_code: 503 });
  });
});

describe("bucket names", () => {
  it("a client's 60 KB bucket key reaches the store as a 43-character hash, in an object named without it", async () => {
    const names: string[] = [];
    const ids: string[] = [];
    const capturing = {
      idFromName: (name: string) => {
        names.push(name);
        return env.RATE_LIMITER.idFromName(name);
      },
      get: (id: DurableObjectId) => {
        const stub = env.RATE_LIMITER.get(id);
        return {
          takeAll: (takes: TakeRequest[], now: number) => {
            ids.push(...takes.map((take) => take.id));
            return stub.takeAll(takes, now);
          },
        };
      },
    } as unknown as Env["RATE_LIMITER"];
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, {
      "policies/limit.yaml": limitPolicy(5, "per-key", "req.headers['x-api-key']"),
    });
    for (const key of ["a".repeat(60_000), "b".repeat(60_000)]) {
      const response = await send(routes, request("/", "1.1.1.1", { "x-api-key": key }), { RATE_LIMITER: capturing });
      expect(response.status).toBe(200);
      await response.body?.cancel();
    }
    expect(ids).toHaveLength(2);
    expect(ids.every((id) => /^[A-Za-z0-9_-]{43}$/.test(id))).toBe(true);
    expect(ids[0]).not.toBe(ids[1]);
    // The object's name is the ingress, scope, action and shard: nothing of the key.
    expect(names.every((name) => name.length < 200 && !name.includes("aaaa") && !name.includes("bbbb"))).toBe(true);
  });
});
