/**
 * forward-internal between tunnels: `https://<label>.internal` in a tunnel's policy names its own account's
 * tunnel at that label, and nothing else (another account's tunnel, an operator route).
 */

import { afterEach, describe, expect, it } from "vitest";
import type { FrameOf } from "../../../src/relay/index.ts";
import { TEST_KEYS } from "../management/keys.ts";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];
const heartbeats: Array<ReturnType<typeof setInterval>> = [];
afterEach(() => {
  for (const timer of heartbeats.splice(0)) clearInterval(timer);
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function agentOf(key: keyof typeof TEST_KEYS): Promise<FakeAgent> {
  const { agent } = await connectAgent(TEST_KEYS[key].key);
  agents.push(agent);
  heartbeats.push(setInterval(() => agent.ping(), 1000));
  return agent;
}

/** A label no other test uses. */
const fresh = (name: string) => `fi-${name}-${Math.random().toString(36).slice(2, 10)}`;

/** A tenant policy forwarding every request to `url`, adding a header first. */
const forwardingTo = (url: string, onError?: string) => ({
  on_http_request: [
    {
      actions: [
        { type: "add-headers", config: { headers: { "x-from": "front" } } },
        { type: "forward-internal", config: { url, ...(onError ? { on_error: onError } : {}) } },
      ],
    },
  ],
});

async function answer(agent: FakeAgent, head: FrameOf<"request_head">, body: string) {
  agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [["content-type", "text/plain"]] });
  agent.send({ type: "data", stream: head.stream, seq: 0, bytes: new TextEncoder().encode(body) });
  agent.send({ type: "end", stream: head.stream, count: 1 });
}

const headerOf = (head: FrameOf<"request_head">, name: string) => head.headers.find(([key]) => key.toLowerCase() === name)?.[1];

describe("forward-internal between tunnels", () => {
  it("reaches another tunnel of the same account, through its policy, with the client's Host and the front's headers", async () => {
    const backLabel = fresh("back");
    const backAgent = await agentOf("dev");
    const back = await backAgent.startOk({
      subdomain: backLabel,
      traffic_policy: { on_http_request: [{ actions: [{ type: "add-headers", config: { headers: { "x-via": "back" } } }] }] },
    });
    const frontAgent = await agentOf("devSecond");
    const front = await frontAgent.startOk({ subdomain: fresh("front"), traffic_policy: forwardingTo(`https://${backLabel}.internal`) });

    const pending = publicFetch(front.public_url!, "/orders?id=7", { method: "POST", body: "order", headers: { "cf-connecting-ip": "198.51.100.4" } });
    const head = await backAgent.next("request_head");
    expect(head.tunnel_id).toBe(back.id);
    expect(head.target).toBe("/orders?id=7");
    expect(head.method).toBe("POST");
    expect(head.client_addr).toBe("198.51.100.4");
    expect(headerOf(head, "host")).toBe(new URL(front.public_url!).host);
    expect(headerOf(head, "x-from")).toBe("front");
    expect(headerOf(head, "x-via")).toBe("back");
    await answer(backAgent, head, "from back");
    const response = await pending;
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("from back");
  });

  it("a hostile policy cannot reach another account's tunnel: answered as no tunnel at all, and the other tunnel never sees it", async () => {
    const victimLabel = fresh("victim");
    const victimAgent = await agentOf("other");
    await victimAgent.startOk({ subdomain: victimLabel });
    const attacker = await agentOf("dev");
    const front = await attacker.startOk({ subdomain: fresh("thief"), traffic_policy: forwardingTo(`https://${victimLabel}.internal`) });

    const refused = await publicFetch(front.public_url!, "/stolen");
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({
      error_code: "ERR_SVC_3200",
      msg: `forward-internal found no target at https://${victimLabel}.internal: nothing of this owner is served there, or it is offline.`,
    });
    // The victim's first request is one sent to it directly: the forward never reached its agent.
    const direct = publicFetch(`http://${victimLabel}.localhost`, "/direct");
    const head = await victimAgent.next("request_head");
    expect(head.target).toBe("/direct");
    await answer(victimAgent, head, "mine");
    expect(await (await direct).text()).toBe("mine");
  });

  it("a tenant cannot name an operator route: only .internal URLs load, and they name tunnels", async () => {
    const agent = await agentOf("dev");
    const refused = await agent.start({ subdomain: fresh("route"), traffic_policy: forwardingTo("http://127.0.0.1/demo") });
    expect(refused).toMatchObject({ type: "tunnel_failed", code: "invalid_traffic_policy" });
    expect((refused as { message: string }).message).toContain("must name an internal endpoint: a host name ending in .internal");

    // `demo.internal` is no tunnel of this account, whatever routes the gateway has.
    const front = await agent.startOk({ subdomain: fresh("route"), traffic_policy: forwardingTo("https://demo.internal") });
    const response = await publicFetch(front.public_url!, "/demo");
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_3200" });
  });

  it("a loop between two tunnels is refused with 508 ERR_SVC_3603", async () => {
    const [a, b] = [fresh("loop-a"), fresh("loop-b")];
    const agent = await agentOf("dev");
    await agent.startOk({ name: "a", subdomain: a, traffic_policy: forwardingTo(`https://${b}.internal`) });
    await agent.startOk({ name: "b", subdomain: b, traffic_policy: forwardingTo(`https://${a}.internal`) });
    const response = await publicFetch(`http://${a}.localhost`, "/");
    expect(response.status).toBe(508);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_3603" });
  });

  it("on_error: continue serves the tunnel itself when the target is offline", async () => {
    const agent = await agentOf("dev");
    const front = await agent.startOk({ subdomain: fresh("fallback"), traffic_policy: forwardingTo(`https://${fresh("gone")}.internal`, "continue") });
    const pending = publicFetch(front.public_url!, "/here", { method: "PUT", body: "kept" });
    const head = await agent.next("request_head");
    expect(head.tunnel_id).toBe(front.id);
    expect(headerOf(head, "x-from")).toBe("front");
    await answer(agent, head, "served by front");
    expect(await (await pending).text()).toBe("served by front");
  });
});
