import { afterEach, describe, expect, it } from "vitest";
import { EDGE_DECISIONS_VERSION, type FrameOf } from "../../../src/relay/index.ts";
import { responseFrames } from "../../shared/frames.ts";
import { connectAgent, type FakeAgent, publicFetch } from "./fake-agent.ts";

const agents: FakeAgent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

const LIMITED_POLICY = {
  inbound: [
    {
      name: "per client",
      actions: [{ type: "rate-limit", config: { name: "per-client", algorithm: "sliding_window", capacity: 1, rate: "60s", bucket_key: ["conn.client_ip"] } }],
    },
  ],
};

async function tunnelWith(policy: unknown, hello: Partial<FrameOf<"hello">> = { edge_decisions: EDGE_DECISIONS_VERSION }) {
  const { agent } = await connectAgent(undefined, hello);
  agents.push(agent);
  return { agent, tunnel: await agent.startOk({ traffic_policy: policy }) };
}

function answerOk(agent: FakeAgent, head: FrameOf<"request_head">): void {
  for (const frame of responseFrames(head.stream, 200, "ok", [["content-type", "text/plain"]])) agent.send(frame);
}

describe("edge decisions reach the agent", () => {
  it("a relayed request's head carries the rate limit it was counted against, not as a header", async () => {
    const { agent, tunnel } = await tunnelWith(LIMITED_POLICY);
    const pending = publicFetch(tunnel.public_url!, "/first", { headers: { "cf-connecting-ip": "198.51.100.21" } });
    const head = await agent.next("request_head");
    answerOk(agent, head);
    expect((await pending).status).toBe(200);
    expect(head.decisions).toEqual([
      { name: "per-client", bucket_key: "198.51.100.21", limited: false, outcome: "allowed", retry_after: 0, remaining: 0, capacity: 1, window_s: 60 },
    ]);
    expect(head.headers.map(([name]) => name).filter((name) => name.includes("decision"))).toEqual([]);
  });

  it("a 429 the edge answered itself comes as an edge_decision naming the entry, the action and the variables", async () => {
    const { agent, tunnel } = await tunnelWith(LIMITED_POLICY);
    const first = publicFetch(tunnel.public_url!, "/a", { headers: { "cf-connecting-ip": "198.51.100.22" } });
    answerOk(agent, await agent.next("request_head"));
    await first;
    const limited = await publicFetch(tunnel.public_url!, "/b?x=1", { headers: { "cf-connecting-ip": "198.51.100.22", "x-who": "me" } });
    expect(limited.status).toBe(429);
    const decision = await agent.next("edge_decision");
    expect(decision).toMatchObject({
      tunnel_id: tunnel.id,
      method: "GET",
      target: "/b?x=1",
      client_addr: "198.51.100.22",
      status: 429,
      answered_by: { phase: "inbound", entry: 0, entry_name: "per client", action: 0, type: "rate-limit" },
      suppressed: 0,
    });
    expect(decision.headers).toContainEqual(["x-who", "me"]);
    expect(decision.rate_limits).toHaveLength(1);
    expect(decision.rate_limits[0]).toMatchObject({ name: "per-client", bucket_key: "198.51.100.22", limited: true, outcome: "limited" });
    expect(decision.rate_limits[0].retry_after).toBe(Number(limited.headers.get("retry-after")));
  });

  it("a deny is told with no rate limits", async () => {
    const { agent, tunnel } = await tunnelWith({
      inbound: [{ expressions: ["req.url.path == '/admin'"], actions: [{ type: "deny", config: { status_code: 403 } }] }],
    });
    expect((await publicFetch(tunnel.public_url!, "/admin")).status).toBe(403);
    const decision = await agent.next("edge_decision");
    expect(decision).toMatchObject({ status: 403, target: "/admin", answered_by: { entry: 0, action: 0, type: "deny" }, rate_limits: [] });
  });
});
