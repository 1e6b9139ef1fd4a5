/**
 * The circuit-breaker action in a tunnel's traffic policy: the agent's local service fails on command, the edge
 * stops relaying to it, and relays again once a probe after tripped_duration succeeds. Real time: the Worker's
 * own isolate serves these requests, so recovery is waited for, never timed.
 */

import { afterEach, describe, expect, it, vi } from "vitest";
import { keptAliveTunnels, publicFetch, type FakeAgent } from "./fake-agent.ts";

const tunnels = keptAliveTunnels();
afterEach(() => tunnels.closeAll());

/** The agent's local service: answers every relayed request with `status`, counting them, until the agent closes. */
function localService(agent: FakeAgent) {
  const service = { status: 500, hits: 0 };
  void (async () => {
    for (;;) {
      const head = await agent.next("request_head", () => true, 60_000).catch(() => undefined);
      if (!head) return;
      service.hits++;
      agent.send({ type: "response_head", stream: head.stream, status: service.status, headers: [["content-type", "text/plain"]] });
      agent.send({ type: "end", stream: head.stream, count: 0 });
    }
  })();
  return service;
}

async function statusOf(response: Response): Promise<number> {
  await response.body?.cancel();
  return response.status;
}

const policy = (config: Record<string, unknown>) => ({ on_http_request: [{ actions: [{ type: "circuit-breaker", config }] }] });

describe("circuit-breaker on a tunnel", () => {
  it("trips on the local service's 500s, answers 503 at the edge, and recovers after tripped_duration", async () => {
    const { agent } = await tunnels.start();
    const tunnel = await agent.startOk({
      subdomain: `cb-${Math.random().toString(36).slice(2, 10)}`,
      traffic_policy: policy({ error_threshold: 0.5, volume_threshold: 3, tripped_duration: "1s" }),
    });
    const service = localService(agent);
    const get = async () => statusOf(await publicFetch(tunnel.public_url!, "/work"));

    const first = [];
    for (let i = 0; i < 3; i++) first.push(await get());
    expect(first).toEqual([500, 500, 500]);
    // Outcomes are recorded after each response has gone out (ctx.waitUntil), so the circuit opens a moment later.
    await vi.waitFor(async () => expect(await get()).toBe(503), { timeout: 15_000, interval: 50 });

    const hits = service.hits;
    const refused = await publicFetch(tunnel.public_url!, "/work");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("x-tollgate-circuit")).toBe("open");
    expect(await refused.json()).toMatchObject({ error_code: "ERR_SVC_303" });
    expect(service.hits).toBe(hits);

    service.status = 200;
    // Refused until tripped_duration has passed; then one probe reaches the service, and its success closes the circuit.
    await vi.waitFor(async () => expect(await get()).toBe(200), { timeout: 15_000, interval: 100 });
    expect(service.hits).toBe(hits + 1);
    for (let i = 0; i < 3; i++) expect(await get()).toBe(200);
    expect(service.hits).toBe(hits + 4);
  });

  it("with enforce: false every request reaches the local service", async () => {
    const { agent } = await tunnels.start();
    const tunnel = await agent.startOk({
      subdomain: `cbs-${Math.random().toString(36).slice(2, 10)}`,
      traffic_policy: policy({ volume_threshold: 2, enforce: false }),
    });
    const service = localService(agent);
    for (let i = 0; i < 5; i++) expect(await statusOf(await publicFetch(tunnel.public_url!, "/work"))).toBe(500);
    expect(service.hits).toBe(5);
  });

  it("a tunnel's policy with a bound exceeded is refused when the tunnel starts", async () => {
    const { agent } = await tunnels.start();
    const answer = await agent.start({ subdomain: `cbx-${Math.random().toString(36).slice(2, 10)}`, traffic_policy: policy({ tripped_duration: "1h" }) });
    expect(answer).toMatchObject({ type: "tunnel_failed", code: "invalid_traffic_policy" });
    expect(answer.type === "tunnel_failed" && answer.message).toContain("on_http_request[0].actions[0].config.tripped_duration: must be at most 2m");
  });
});
