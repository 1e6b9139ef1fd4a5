/**
 * Overrides set through the management API decide live traffic of the real Worker (SELF) and of a second isolate
 * memory (its own bucket memory and its own copy of the overrides, reading the same account store), within a
 * second of the API's answer; deleting or expiring an override gives the action's own limit back, count kept.
 *
 * The pool runs the Worker in one workerd isolate, so the second isolate is the gateway's pipeline with a second
 * isolate state built as worker.ts builds one: the same code, its own memories.
 */

import { createExecutionContext, env, waitOnExecutionContext, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../../src/env.ts";
import { LoadedGatewayMemory } from "../../../src/gateway/loaded-config.ts";
import { handleGatewayRequest } from "../../../src/gateway/pipeline.ts";
import { OverrideCache } from "../../../src/limiter/override-cache.ts";
import { overrideServices } from "../../../src/limiter/override-service.ts";
import { accountStore } from "../../../src/management/account-store.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { call, callJson } from "../management/helpers.ts";
import { newIsolate } from "./harness.ts";
import { waitPast } from "../../shared/wait-past.ts";

const OVERRIDES = "/rate_limit_overrides";
const target = { edge_id: "edghts_local", route_id: "edghtsrt_demo", action: "demo-per-client" };

/** The second isolate: fresh memories, and its own copy of the overrides read from the real account store. */
const second = {
  ...newIsolate(),
  limitOverrides: overrideServices<Env>(new OverrideCache(), {
    read: (e, accountId) => accountStore(e, accountId).liveOverrides(),
    accountOf: (_, scope) => (scope.startsWith("route:") ? "acct_dev" : undefined),
  }),
};
const gateway = new LoadedGatewayMemory();

function demoRequest(ip: string): Request {
  return new Request("http://127.0.0.1/demo", { headers: { "cf-connecting-ip": ip } });
}

/** One request to /demo through the Worker (isolate "a") or the second isolate ("b"); its status and RateLimit-Policy. */
async function demo(ip: string, via: "a" | "b" = "a"): Promise<{ status: number; policy: string | null }> {
  let response: Response;
  if (via === "a") response = await SELF.fetch(demoRequest(ip));
  else {
    const loaded = gateway.of("localhost");
    if (!loaded.ok) throw loaded.error;
    const ctx = createExecutionContext();
    response = await handleGatewayRequest(demoRequest(ip), {
      env: env as Env,
      ctx,
      routes: loaded.gateway.routes,
      handlers: upstreamHandlers,
      isolate: second,
    });
    await waitOnExecutionContext(ctx);
  }
  await response.body?.cancel();
  return { status: response.status, policy: response.headers.get("ratelimit-policy") };
}

async function override(body: Record<string, unknown>): Promise<{ id: string; answeredAt: number }> {
  const created = await callJson<{ id: string }>("POST", OVERRIDES, 201, { key: "devSecond", json: { ...target, ...body } });
  return { id: created.id, answeredAt: Date.now() };
}

describe("a live override decides the next requests in every isolate, and keeps the count", () => {
  it("raised on a full bucket: admitted up to the new capacity a second after the answer, then the old limit again after delete", async () => {
    const ip = "203.0.113.10";
    for (let i = 0; i < 5; i++) expect((await demo(ip, i % 2 === 0 ? "a" : "b")).status).toBe(200);
    expect((await demo(ip, "a")).status).toBe(429);
    expect((await demo(ip, "b")).status).toBe(429);

    const raised = await override({ bucket_key: ip, capacity: 8, rate: "60s", description: "ten times, until Friday" });
    await waitPast(raised.answeredAt + 1000);
    // 5 used: 3 more fit under 8, whichever isolate asks; the 9th is refused (the count was kept, not restarted).
    expect(await demo(ip, "a")).toEqual({ status: 200, policy: '"demo-per-client";q=8;w=60' });
    expect((await demo(ip, "b")).status).toBe(200);
    expect((await demo(ip, "a")).status).toBe(200);
    expect((await demo(ip, "b")).status).toBe(429);
    expect((await demo(ip, "a")).status).toBe(429);

    expect((await call("DELETE", `${OVERRIDES}/${raised.id}`, { key: "devSecond" })).status).toBe(204);
    const deletedAt = Date.now();
    await waitPast(deletedAt + 1000);
    expect(await demo(ip, "a")).toEqual({ status: 429, policy: '"demo-per-client";q=5;w=60' });
    expect((await demo(ip, "b")).status).toBe(429);
  });

  it("lowered by a pattern: the next request past the new capacity is refused in both isolates", async () => {
    const ip = "203.0.113.20";
    expect((await demo(ip, "a")).status).toBe(200);
    expect((await demo(ip, "b")).status).toBe(200);
    const lowered = await override({ bucket_key: "203.0.113.2*", capacity: 2, rate: "60s" });
    await waitPast(lowered.answeredAt + 1000);
    expect(await demo(ip, "a")).toEqual({ status: 429, policy: '"demo-per-client";q=2;w=60' });
    expect((await demo(ip, "b")).status).toBe(429);
    // Another key the pattern does not match keeps the action's own limit.
    expect(await demo("203.0.113.30", "a")).toEqual({ status: 200, policy: '"demo-per-client";q=5;w=60' });
  });

  it("an expired override stops deciding at its time, with no request to remove it", async () => {
    const ip = "203.0.113.40";
    for (let i = 0; i < 5; i++) expect((await demo(ip, "a")).status).toBe(200);
    // Ten seconds of life: however slow the machine, the override is seen before it ends. A request refused under
    // the old limit counts nothing, so polling until one is admitted spends nothing the assertions rely on.
    const expiresAt = Date.now() + 10_000;
    await override({ bucket_key: ip, capacity: 6, rate: "60s", expires_at: new Date(expiresAt).toISOString() });
    await vi.waitFor(async () => expect(await demo(ip, "b")).toEqual({ status: 200, policy: '"demo-per-client";q=6;w=60' }), { timeout: 9_000, interval: 100 });
    // 6 of 6 used: refused under the override until it expires, then refused under the action's own 5, which
    // nothing removed: the override ended by its time alone.
    await vi.waitFor(async () => expect(await demo(ip, "a")).toEqual({ status: 429, policy: '"demo-per-client";q=5;w=60' }), {
      timeout: 30_000,
      interval: 250,
    });
    expect((await demo(ip, "b")).status).toBe(429);
  }, 60_000);
});
