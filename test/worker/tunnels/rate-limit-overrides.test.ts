/**
 * A rate-limit override of a tunnel's policy, through the real Worker: the agent's account names its online tunnel
 * by id, and the tunnel host's bucket is decided by the override a second after the API answered (the isolate's
 * copy is never used past 900 ms), the count kept; deleting it gives the policy's own limit back. Another account
 * can neither name this tunnel nor see the override, and this account cannot name another account's tunnel.
 */

import { afterEach, describe, expect, it } from "vitest";
import { call, callError, callJson } from "../management/helpers.ts";
import { TEST_KEYS } from "../management/keys.ts";
import { connectAgent, type FakeAgent, keptAliveTunnels, publicFetch } from "./fake-agent.ts";
import { waitPast } from "../../shared/wait-past.ts";

const OVERRIDES = "/rate_limit_overrides";
const tunnels = keptAliveTunnels();
const others: FakeAgent[] = [];
afterEach(() => {
  tunnels.closeAll();
  for (const agent of others.splice(0)) if (!agent.closed) agent.close();
});

const policy = {
  on_http_request: [
    {
      actions: [
        {
          type: "rate-limit",
          config: { name: "per-client", algorithm: "sliding_window", capacity: 2, rate: "60s", bucket_key: ["conn.client_ip"], ratelimit_headers: true },
        },
      ],
    },
  ],
};

/** The agent's local service: 200 to every relayed request until the agent closes. */
function serveOk(agent: FakeAgent): void {
  void (async () => {
    for (;;) {
      const head = await agent.next("request_head", () => true, 60_000).catch(() => undefined);
      if (!head) return;
      agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [["content-type", "text/plain"]] });
      agent.send({ type: "end", stream: head.stream, count: 0 });
    }
  })();
}

const label = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;

describe("a rate-limit override of a tunnel's policy", () => {
  it("raises the tunnel host's full bucket a second after the answer, count kept; delete gives the policy's limit back", async () => {
    const { agent } = await tunnels.start();
    const tunnel = await agent.startOk({ subdomain: label("rlo"), traffic_policy: policy });
    serveOk(agent);
    const ip = "198.51.100.7";
    const get = async () => {
      const response = await publicFetch(tunnel.public_url!, "/work", { headers: { "cf-connecting-ip": ip } });
      await response.body?.cancel();
      return { status: response.status, policy: response.headers.get("ratelimit-policy") };
    };
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(200);
    expect(await get()).toEqual({ status: 429, policy: '"per-client";q=2;w=60' });
    const bucket = `/tunnels/${tunnel.id}/rate_limit_buckets?action=per-client&bucket_key=${ip}`;
    expect(await callJson("GET", bucket, 200, { key: "dev" })).toMatchObject({
      tunnel_id: tunnel.id,
      override: null,
      windows: [{ window: "60s", capacity: 2, used: 2, remaining: 0 }],
    });
    await callError("GET", bucket, 404, 204, { key: "other" });

    const body = { tunnel_id: tunnel.id, action: "per-client", bucket_key: ip, capacity: 5, rate: "60s" };
    // another account's key cannot name this tunnel
    await callError("POST", OVERRIDES, 404, 204, { key: "other", json: body });
    const created = await callJson<Record<string, unknown>>("POST", OVERRIDES, 201, { key: "devSecond", json: body });
    const answeredAt = Date.now();
    expect(created).toMatchObject({ tunnel_id: tunnel.id, action: "per-client", bucket_key: ip, match: "exact" });
    expect(created).not.toHaveProperty("edge_id");
    await callError("GET", `${OVERRIDES}/${created.id}`, 404, 204, { key: "other" });
    expect(await callJson("GET", `${OVERRIDES}/${created.id}`, 200, { key: "dev" })).toMatchObject({ tunnel_id: tunnel.id });

    await waitPast(answeredAt + 1000);
    // 2 used: 3 more fit under 5 (the count was kept, not restarted), then refused.
    expect(await get()).toEqual({ status: 200, policy: '"per-client";q=5;w=60' });
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429);
    const read = await callJson<{ override: { id: string }; windows: unknown[] }>("GET", bucket, 200, { key: "dev" });
    expect(read.override.id).toBe(created.id);
    expect(read.windows).toMatchObject([{ capacity: 5, used: 5, remaining: 0 }]);

    expect((await call("DELETE", `${OVERRIDES}/${created.id}`, { key: "devSecond" })).status).toBe(204);
    await waitPast(Date.now() + 1000);
    expect(await get()).toEqual({ status: 429, policy: '"per-client";q=2;w=60' });
  });

  it("names only an online tunnel of the caller's account: another account's, an unknown or a malformed id is 404", async () => {
    const { agent } = await connectAgent(TEST_KEYS.other.key);
    others.push(agent);
    const theirs = await agent.startOk({ subdomain: label("rlx"), traffic_policy: policy });
    const body = { action: "per-client", bucket_key: "*", capacity: 100, rate: "60s" };
    const refused = await callError("POST", OVERRIDES, 404, 204, { key: "dev", json: { ...body, tunnel_id: theirs.id } });
    expect(refused.details).toMatchObject({ tunnel_id: theirs.id });
    // the owner can (the same tunnel, its own key)
    const own = await callJson<{ id: string }>("POST", OVERRIDES, 201, { key: "other", json: { ...body, tunnel_id: theirs.id } });
    expect((await call("DELETE", `${OVERRIDES}/${own.id}`, { key: "other" })).status).toBe(204);
    await callError("POST", OVERRIDES, 404, 204, { key: "dev", json: { ...body, tunnel_id: "tn_2abcdefghijklmnopqrstuvwxyz" } });
    // a labeled tunnel has no policy of its own (its traffic is a route's): nothing to override
    const labeled = await agent.startOk({ proto: undefined, labels: { edge: "edghts_x", app: "api" } });
    await callError("POST", OVERRIDES, 404, 204, { key: "other", json: { ...body, tunnel_id: labeled.id } });
    await callError("POST", OVERRIDES, 404, 204, { key: "dev", json: { ...body, tunnel_id: "tn_../../x" } });
    // nor read another account's tunnel's buckets back
    await callError("GET", `/tunnels/${theirs.id}/rate_limit_buckets?action=per-client&bucket_key=x`, 404, 204, { key: "dev" });
    await callError("GET", "/tunnels/tn_..%2F..%2Fx/rate_limit_buckets?action=per-client&bucket_key=x", 404, 204, { key: "dev" });
    const read = await callJson<{ windows: unknown[] }>("GET", `/tunnels/${theirs.id}/rate_limit_buckets?action=per-client&bucket_key=x`, 200, {
      key: "other",
    });
    expect(read.windows).toMatchObject([{ capacity: 2, used: 0, remaining: 2 }]);
  });

  it("refuses a hostile or ambiguous target with a 400 naming the field", async () => {
    const body = { action: "per-client", bucket_key: "*", capacity: 100, rate: "60s" };
    const long = await callError("POST", OVERRIDES, 400, 215, { key: "dev", json: { ...body, tunnel_id: `tn_${"x".repeat(126)}` } });
    expect(long.details.field).toBe("tunnel_id");
    const both = await callError("POST", OVERRIDES, 400, 215, {
      key: "dev",
      json: { ...body, tunnel_id: "tn_2abcdefghijklmnopqrstuvwxyz", edge_id: "edghts_local", route_id: "edghtsrt_demo" },
    });
    expect(both.details.field).toBe("tunnel_id");
    const none = await callError("POST", OVERRIDES, 400, 215, { key: "dev", json: body });
    expect(none.details.field).toBe("edge_id");
  });
});
