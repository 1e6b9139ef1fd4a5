/**
 * POST /api/simulate on the agent API: a candidate policy over captured requests, decided in the agent, next to
 * what really happened; bounded, and behind the API's Host and JSON checks.
 */

import { describe, expect, it } from "vitest";
import { createAgentApi, type AgentApiContext } from "../../src/agent/api/app.ts";
import { simulateRoutes } from "../../src/agent/api/simulate-routes.ts";
import { CaptureStore } from "../../src/agent/capture/capture-store.ts";
import type { ExchangeInfo } from "../../src/agent/edge/exchange.ts";
import { MAX_SIMULATED_REQUESTS } from "../../src/policy/simulate/index.ts";

const T0 = Date.parse("2026-03-01T12:00:00.000Z");
let streams = 0;

/** A capture store holding `count` GETs of one client a second apart, each answered `status` by the local service. */
function captured(count: number, status = 200): { capture: CaptureStore; ids: string[] } {
  const capture = new CaptureStore({ maxBytes: 8 * 1024 * 1024, now: () => T0 });
  for (let i = 0; i < count; i++) {
    const info: ExchangeInfo = {
      key: `t:${++streams}`,
      tunnelName: "web",
      tunnelId: "tn_1",
      inspect: true,
      start: new Date(T0 + i * 1000),
      startNs: process.hrtime.bigint(),
      method: "GET",
      target: `/items/${i}`,
      headers: [
        ["host", "web.localhost"],
        ["x-api-key", "k1"],
      ],
      remoteAddr: "203.0.113.7",
      scheme: "https",
    };
    const observer = capture.tap.open(info)!;
    observer.onRequestEnd?.();
    observer.onResponseHead?.({ status, statusText: "", headers: [["content-type", "text/plain"]], httpVersion: "1.1" });
    observer.onResponseEnd?.(1000n);
    observer.onClose?.({ durationNs: 1000n });
  }
  return { capture, ids: capture.list({ limit: 1000 }).map((exchange) => exchange.id) };
}

/** The agent API with the route mounted; /api/status and /api/tunnels are not called here. */
function api(capture: CaptureStore) {
  return createAgentApi({} as AgentApiContext, { mounts: [simulateRoutes({ capture })] });
}

const post = (app: ReturnType<typeof api>, body: unknown, headers: Record<string, string> = {}) =>
  app.request("http://127.0.0.1:4040/api/simulate", {
    method: "POST",
    headers: { host: "127.0.0.1:4040", "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

const policy = (capacity: number) =>
  `inbound:\n  - actions:\n      - type: rate-limit\n        config: { name: per-key, capacity: ${capacity}, rate: 60s, bucket_key: ["req.headers['x-api-key']"] }\n`;

describe("POST /api/simulate", () => {
  it("shows, next to each captured request, what a stricter candidate would have done and what changed", async () => {
    const { capture, ids } = captured(3);
    const response = await post(api(capture), { policy: policy(2), ids });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { results: Array<Record<string, unknown>>; missing: string[] };
    expect(body.results.map((r) => [r.uri, (r.actual as { status_code: number }).status_code, (r.simulated as { status: number }).status, r.change])).toEqual([
      ["/items/0", 200, 200, "same"],
      ["/items/1", 200, 200, "same"],
      ["/items/2", 200, 429, "newly_limited"],
    ]);
    // the third came 2 s after the first: 58 s until the first leaves the window
    expect(body.results[2]!.simulated).toMatchObject({ actions: [{ outcome: "limited", rate_limit: { bucket_key: "k1", retry_after: 58 } }] });
    expect(body.missing).toEqual([]);
  });

  it("a refusal by the local service stays what it was; the candidate's own 429 is newly limited", async () => {
    const { capture, ids } = captured(2, 403);
    const body = (await (await post(api(capture), { policy: policy(1), ids })).json()) as { results: Array<{ change: string }> };
    expect(body.results.map((r) => r.change)).toEqual(["same", "newly_limited"]);
  });

  it("a policy that does not load is a 400 that locates the issue", async () => {
    const { capture, ids } = captured(1);
    const response = await post(api(capture), { policy: policy(5).replace("60s", "65s"), ids });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { msg: string }).msg).toBe(
      "the policy does not load: policy:4: inbound[0].actions[0].config.rate: must be a multiple of 10s",
    );
  });

  it("names the requests evicted since the page listed them, and 404s when none is left", async () => {
    const { capture, ids } = captured(1);
    const body = (await (await post(api(capture), { policy: policy(5), ids: [...ids, "gone"] })).json()) as { missing: string[] };
    expect(body.missing).toEqual(["gone"]);
    expect((await post(api(capture), { policy: policy(5), ids: ["gone"] })).status).toBe(404);
  });

  it(`is bounded: at most ${MAX_SIMULATED_REQUESTS} ids, JSON only, this machine's Host only, POST only`, async () => {
    const { capture, ids } = captured(1);
    const app = api(capture);
    const tooMany = await post(app, { policy: policy(5), ids: Array.from({ length: MAX_SIMULATED_REQUESTS + 1 }, (_, i) => `id${i}`) });
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { msg: string }).msg).toBe(
      `invalid simulation: ids: exceeds the limit of ${MAX_SIMULATED_REQUESTS} requests per simulation`,
    );
    expect((await post(app, { policy: policy(5), ids }, { "content-type": "text/plain" })).status).toBe(415);
    expect((await post(app, { policy: policy(5), ids }, { host: "attacker.example" })).status).toBe(403);
    expect((await app.request("http://127.0.0.1:4040/api/simulate", { headers: { host: "127.0.0.1:4040" } })).status).toBe(405);
  });
});
