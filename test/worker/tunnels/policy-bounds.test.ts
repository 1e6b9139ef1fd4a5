/**
 * Hostile traffic policies in start_tunnel: every one gets a tunnel_failed answer that says why, and the
 * session lives on. These frames are built by hand: the agent's encoder (JSON.stringify) cannot even write
 * 100,000 nested lists.
 */

import { afterEach, describe, expect, it } from "vitest";
import { FRAME_TYPES, PROTOCOL_VERSION } from "../../../src/relay/index.ts";
import { connectAgent, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];

afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function agentSession(): Promise<FakeAgent> {
  const { agent } = await connectAgent();
  agents.push(agent);
  return agent;
}

/** A start_tunnel frame whose traffic_policy is `policyJson`, written as is. */
function startTunnelFrame(requestId: number, policyJson: string): Uint8Array {
  const payload = new TextEncoder().encode(
    `{"request_id":${requestId},"name":"web","proto":"http","forwards_to":"http://localhost:3000","traffic_policy":${policyJson}}`,
  );
  const frame = new Uint8Array(10 + payload.byteLength);
  frame[0] = PROTOCOL_VERSION;
  frame[1] = FRAME_TYPES.start_tunnel;
  new DataView(frame.buffer).setUint32(6, payload.byteLength);
  frame.set(payload, 10);
  return frame;
}

async function answerTo(agent: FakeAgent, requestId: number, policyJson: string) {
  agent.ws.send(startTunnelFrame(requestId, policyJson));
  return agent.nextOf(["tunnel_started", "tunnel_failed"], (frame) => frame.request_id === requestId);
}

describe("start_tunnel with a hostile traffic policy", () => {
  it("100,000 nested lists get tunnel_failed naming the depth limit, and the session serves the next start", async () => {
    const agent = await agentSession();
    const answer = await answerTo(agent, 1, "[".repeat(100_000) + "]".repeat(100_000));
    expect(answer).toEqual({
      type: "tunnel_failed",
      request_id: 1,
      code: "invalid_traffic_policy",
      message: `traffic_policy${"[0]".repeat(12)}: exceeds the limit of 12 nested maps and lists`,
    });
    expect((await agent.startOk()).id).toMatch(/^tn_/);
  });

  it("an expression of 20,000 terms gets tunnel_failed naming the size limit", async () => {
    const agent = await agentSession();
    const expression = Array.from({ length: 20_000 }, () => "1").join(" + ");
    const answer = await answerTo(agent, 1, JSON.stringify({ inbound: [{ expressions: [`${expression} > 0`], actions: [{ type: "deny" }] }] }));
    expect(answer).toEqual({
      type: "tunnel_failed",
      request_id: 1,
      code: "invalid_traffic_policy",
      message: "traffic_policy: exceeds the limit of 16384 bytes for a policy (as JSON)",
    });
    expect((await agent.startOk()).id).toMatch(/^tn_/);
  });

  it("an expression nested 500 parentheses deep gets tunnel_failed naming the nesting limit", async () => {
    const agent = await agentSession();
    const expression = `${"(".repeat(500)}true${")".repeat(500)}`;
    const answer = await answerTo(agent, 7, JSON.stringify({ inbound: [{ expressions: [expression], actions: [{ type: "deny" }] }] }));
    expect(answer).toEqual({
      type: "tunnel_failed",
      request_id: 7,
      code: "invalid_traffic_policy",
      message: "traffic_policy.inbound[0].expressions[0]: expression exceeds the limit of 32 nested (), [] and {}",
    });
  });

  it("a replace() chain that doubles the string gets tunnel_failed at load, before any request", async () => {
    const agent = await agentSession();
    const expression = `req.url.query${".replace('a', 'aa')".repeat(7)} == 'abcdef'`;
    const answer = await answerTo(agent, 2, JSON.stringify({ inbound: [{ expressions: [expression], actions: [{ type: "deny" }] }] }));
    expect(answer).toEqual({
      type: "tunnel_failed",
      request_id: 2,
      code: "invalid_traffic_policy",
      message: `traffic_policy.inbound[0].expressions[0]: replace() must not lengthen a string: the replacement "aa" is longer than the text it replaces, "a"`,
    });
  });
});
