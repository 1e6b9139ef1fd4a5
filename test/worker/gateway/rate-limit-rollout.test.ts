/**
 * Rolling limits out through the Worker's pipeline and real RateLimiter objects in workerd: shadow mode,
 * ngrok's phase names, RateLimit header fields, bounded decision logs and Analytics Engine data points.
 */

import { env } from "cloudflare:test";
import { parseList } from "structured-headers";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import type { Env } from "../../../src/env.ts";
import type { DataPointWriter } from "../../../src/gateway/decision-sink.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { gatewayFrom, newIsolate, send, singleEdge } from "./harness.ts";

const route = (policy = "p.yaml") => `      - { id: r, match: /, upstream: echo, traffic_policy: ${policy} }\n`;

function request(ip = "198.51.100.7") {
  return new Request("http://gw.test/", { headers: { "cf-connecting-ip": ip } });
}

const limit = (phase: string, options: string) => `
${phase}:
  - actions:
      - type: rate-limit
        config: { name: per-client, rate: 60s, ${options} }
  - expressions: ["actions.svc.rate_limit.limited"]
    actions:
      - type: add-headers
        config: { headers: { x-would-be-limited: "yes" } }
`;

/** A dataset that keeps what is written to it. */
function capturingDataset(): DataPointWriter & { points: Array<{ blobs: string[]; doubles: number[]; indexes: string[] }> } {
  const points: Array<{ blobs: string[]; doubles: number[]; indexes: string[] }> = [];
  return { points, writeDataPoint: (point) => void points.push(point) };
}

/** The members of a RateLimit field: the policy name and its parameters (all Integers here). */
function members(response: Response, field: string): Array<{ policy: string; [param: string]: number | string }> {
  return parseList(response.headers.get(field) ?? "").map(([value, params]) => ({
    ...(Object.fromEntries(params) as Record<string, number>),
    policy: String(value),
  }));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("enforce: false through the Worker", () => {
  it("never answers 429, and a later entry sees limited exactly from the capacity+1-th request on", async () => {
    const routes = singleEdge(route(), { "policies/p.yaml": limit("inbound", "capacity: 3, enforce: false") });
    const seen: Array<[number, string | undefined]> = [];
    for (let i = 0; i < 6; i++) {
      const response = await send(routes, request());
      const echoed = (await response.json()) as { headers: Record<string, string> };
      seen.push([response.status, echoed.headers["x-would-be-limited"]]);
    }
    expect(seen).toEqual([
      [200, undefined],
      [200, undefined],
      [200, undefined],
      [200, "yes"],
      [200, "yes"],
      [200, "yes"],
    ]);
  });

  it("counts like enforce: true: switching enforce on later answers 429 at once for the same bucket", async () => {
    // A literal edge id (not the harness's EDGE placeholder): both gateways share it, and so their buckets.
    const edge = `rollout${Math.random().toString(36).slice(2, 8)}`;
    const gateway = (enforce: boolean) =>
      gatewayFrom({
        "policies/gateway.yaml": `edges:\n  - id: ${edge}\n    hostnames: ["gw.test"]\n    routes:\n${route()}`,
        "policies/p.yaml": limit("inbound", `capacity: 2, enforce: ${enforce}`),
      });
    const shadowStatuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await send(gateway(false), request("203.0.113.9"));
      shadowStatuses.push(response.status);
      await response.body?.cancel();
    }
    expect(shadowStatuses).toEqual([200, 200, 200, 200, 200]);
    const enforced = await send(gateway(true), request("203.0.113.9"));
    await enforced.body?.cancel();
    expect(enforced.status).toBe(429);
  });
});

describe("ngrok's phase names through the Worker", () => {
  it.each(["inbound", "on_http_request"])("%s: the request after the capacity-th gets 429", async (phase) => {
    const routes = singleEdge(route(), { "policies/p.yaml": limit(phase, "capacity: 2") });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await send(routes, request());
      statuses.push(response.status);
      await response.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe("RateLimit header fields through the Worker", () => {
  it("parse as Structured Field lists whose numbers follow the limiter, and t equals retry-after on the 429", async () => {
    const routes = singleEdge(route(), { "policies/p.yaml": limit("inbound", "capacity: 3, ratelimit_headers: true") });
    const answers: Response[] = [];
    for (let i = 0; i < 4; i++) answers.push(await send(routes, request()));
    for (const answer of answers) {
      expect(members(answer, "ratelimit-policy")).toEqual([{ policy: "per-client", q: 3, w: 60 }]);
      await answer.body?.cancel();
    }
    const current = answers.map((answer) => members(answer, "ratelimit")[0]);
    expect(current.map((member) => member.r)).toEqual([2, 1, 0, 0]);
    for (const member of current) {
      expect(Number(member.t)).toBeGreaterThanOrEqual(1);
      expect(Number(member.t)).toBeLessThanOrEqual(61);
    }
    expect(answers[3].status).toBe(429);
    expect(current[3].t).toBe(Number(answers[3].headers.get("retry-after")));
  });

  it("are added to an origin's response, whose headers fetch made immutable, with its status and body intact", async () => {
    const origin = `http://127.0.0.1:${inject("upstreamPort")}`;
    const routes = singleEdge(`      - { id: r, match: /, upstream: "${origin}", traffic_policy: p.yaml }\n`, {
      "policies/p.yaml": limit("inbound", "capacity: 1000, enforce: false, ratelimit_headers: true"),
    });
    const response = await send(routes, request());
    const body = await response.text();
    expect(response.status).toBe(200);
    expect(body.length).toBeGreaterThan(0);
    expect(members(response, "ratelimit")).toEqual([{ policy: "per-client", r: 999, t: expect.any(Number) }]);
  });

  it("are absent on a route whose limits do not opt in", async () => {
    const routes = singleEdge(route(), { "policies/p.yaml": limit("inbound", "capacity: 3") });
    const response = await send(routes, request());
    await response.body?.cancel();
    expect([response.headers.has("ratelimit"), response.headers.has("ratelimit-policy")]).toEqual([false, false]);
  });
});

/** The structured lines written to console.log whose `event` is `kind`. */
function linesOf(spy: ReturnType<typeof vi.spyOn>, kind: string): Array<Record<string, unknown>> {
  return spy.mock.calls
    .map((call: unknown[]) => (typeof call[0] === "string" && call[0].startsWith("{") ? (JSON.parse(call[0]) as Record<string, unknown>) : undefined))
    .filter((line: Record<string, unknown> | undefined): line is Record<string, unknown> => line?.event === kind);
}

describe("decision logs", () => {
  it("a limited decision writes one structured line: route, action, bucket key, enforce, retry-after, ingress", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    const routes = singleEdge(route(), { "policies/p.yaml": limit("inbound", "capacity: 1") });
    for (let i = 0; i < 2; i++) await (await send(routes, request("192.0.2.44"), { INGRESS_ID: "test-ingress" })).body?.cancel();
    const [line, ...more] = linesOf(log, "rate_limit");
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      outcome: "limited",
      action: "per-client",
      bucket_key: "192.0.2.44",
      enforce: true,
      ingress: "test-ingress",
      suppressed: 0,
    });
    expect(line.route).toMatch(/^route:t\d+\w+\/r$/);
    expect(line.retry_after).toBeGreaterThanOrEqual(59);
  });

  it("a flood of 10,000 requests on one bucket writes one line per second of the flood, with the suppressed count", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    let now = Date.now();
    const isolate = newIsolate(() => now);
    const routes = singleEdge(route(), { "policies/p.yaml": limit("inbound", "capacity: 5") });
    const statuses = { 200: 0, 429: 0 } as Record<number, number>;
    for (let batch = 0; batch < 100; batch++) {
      const responses = await Promise.all(Array.from({ length: 100 }, () => send(routes, request("198.51.100.200"), {}, upstreamHandlers, isolate)));
      for (const response of responses) {
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        await response.body?.cancel();
      }
      now += 50; // the flood lasts 5 s on the isolate's clock
    }
    expect(statuses[200]).toBeLessThanOrEqual(5);
    expect(statuses[200] + statuses[429]).toBe(10_000);
    const lines = linesOf(log, "rate_limit");
    // One line per bucket per second: at most 6 seconds are touched by a 5 s flood.
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThanOrEqual(6);
    const suppressed = lines.reduce((sum, line) => sum + (line.suppressed as number), 0);
    // Every limited decision is either a line or counted in the next line's `suppressed` (the last second's
    // suppressed decisions wait for a next line that never comes).
    expect(lines.length + suppressed).toBeLessThanOrEqual(statuses[429]);
    expect(lines.length + suppressed).toBeGreaterThan(statuses[429] - 2_100);
  });
});

describe("Analytics Engine data points", () => {
  it("one point per decision (allowed, limited, shadow_limited, error) with the documented schema", async () => {
    const dataset = capturingDataset();
    const overrides = { RATE_LIMIT_ANALYTICS: dataset, INGRESS_ID: "ae-test" } as Partial<Env>;
    const enforced = singleEdge(route(), { "policies/p.yaml": limit("inbound", "capacity: 1") });
    const shadow = singleEdge(route(), { "policies/p.yaml": limit("on_http_request", "capacity: 1, enforce: false") });
    for (const routes of [enforced, enforced, shadow, shadow]) await (await send(routes, request("192.0.2.9"), overrides)).body?.cancel();
    const failing = {
      idFromName: (name: string) => env.RATE_LIMITER.idFromName(name),
      get: () => ({ takeAll: () => Promise.reject(new Error("object exploded")) }),
    } as unknown as Env["RATE_LIMITER"];
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    await (await send(enforced, request("192.0.2.10"), { ...overrides, RATE_LIMITER: failing })).body?.cancel();

    expect(dataset.points.map((point) => point.blobs[2])).toEqual(["allowed", "limited", "allowed", "shadow_limited", "error"]);
    const [allowed, limited, , shadowLimited, failed] = dataset.points;
    expect(allowed.blobs).toEqual([expect.stringMatching(/^route:/), "per-client", "allowed", "192.0.2.9", "ae-test", ""]);
    expect(allowed.doubles).toEqual([1, 60, 0, 0, 1]);
    expect(limited.doubles).toEqual([1, 60, 0, expect.any(Number), 1]);
    expect(limited.doubles[3]).toBeGreaterThanOrEqual(59);
    expect(shadowLimited.doubles[4]).toBe(0);
    expect(failed.blobs.slice(2)).toEqual(["error", "192.0.2.10", "ae-test", "ERR_RATE_LIMIT_UNAVAILABLE"]);
    for (const point of dataset.points) {
      expect(point.indexes).toHaveLength(1);
      expect(point.indexes[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
  });

  it("writes at most 25 points for one request, Analytics Engine's limit per invocation", async () => {
    const dataset = capturingDataset();
    const entry = (prefix: string) =>
      `  - actions:\n${Array.from({ length: 15 }, (_, i) => `      - type: rate-limit\n        config: { name: ${prefix}${i}, capacity: 10, rate: 60s }`).join("\n")}`;
    const routes = singleEdge(route(), { "policies/p.yaml": `inbound:\n${entry("a")}\n${entry("b")}\n` });
    await (await send(routes, request(), { RATE_LIMIT_ANALYTICS: dataset } as Partial<Env>)).body?.cancel();
    expect(dataset.points).toHaveLength(25);
  });
});

describe("log and restrict-ips through the Worker", () => {
  it("a log action writes one JSON line per request with its metadata and the ingress instance", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    const routes = singleEdge(route(), {
      "policies/p.yaml": `
on_http_request:
  - actions:
      - type: log
        config: { metadata: { path: "\${req.url.path}", client: "\${conn.client_ip}" } }
`,
    });
    for (let i = 0; i < 2; i++) await (await send(routes, request("192.0.2.77"), { INGRESS_ID: "log-test" })).body?.cancel();
    const lines = linesOf(log, "traffic_policy.log");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ ingress: "log-test", action: "inbound[0].actions[0]", phase: "inbound", metadata: { path: "/", client: "192.0.2.77" } });
  });

  it("restrict-ips answers 403 outside the allow-list and lets the allowed address reach the upstream", async () => {
    const routes = singleEdge(route(), {
      "policies/p.yaml": `
inbound:
  - actions:
      - type: restrict-ips
        config: { allow: ["198.51.100.0/24"] }
`,
    });
    const inside = await send(routes, request("198.51.100.20"));
    const outside = await send(routes, request("203.0.113.20"));
    await inside.body?.cancel();
    expect([inside.status, outside.status]).toEqual([200, 403]);
    expect(await outside.json()).toMatchObject({ error_code: "ERR_SVC_300" });
  });
});
