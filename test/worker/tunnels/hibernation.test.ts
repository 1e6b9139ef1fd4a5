/**
 * Public WebSockets across hibernation of the TunnelSession object (real workerd eviction: an actor with
 * only hibernatable sockets is evicted after about 10 s of inactivity and rebuilt on its next event).
 */

import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { TunnelSession } from "../../../src/tunnels/session-object.ts";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

/** Marks the live instance; a rebuilt instance (after hibernation) does not carry the mark. */
const MARK = Symbol.for("tollgate.test.instance-mark");

function sessionStub(sessionId: string) {
  return env.TUNNEL_SESSION.get(env.TUNNEL_SESSION.idFromName(sessionId));
}

async function markInstance(sessionId: string): Promise<void> {
  await runInDurableObject(sessionStub(sessionId), (instance: TunnelSession) => {
    (instance as unknown as Record<symbol, boolean>)[MARK] = true;
  });
}

async function wasRebuilt(sessionId: string): Promise<boolean> {
  return runInDurableObject(sessionStub(sessionId), (instance: TunnelSession) => !(instance as unknown as Record<symbol, boolean>)[MARK]);
}

/** Waits, without touching the object, until workerd has evicted it (the agent keeps pinging: auto-answered). */
async function hibernate(agent: FakeAgent, sessionId: string): Promise<void> {
  for (let round = 0; round < 6; round++) {
    for (let i = 0; i < 12; i++) {
      agent.ping();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    if (await wasRebuilt(sessionId)) return;
    await markInstance(sessionId);
  }
  throw new Error("the session object was never evicted");
}

async function openPublicSocket(agent: FakeAgent, publicUrl: string, path: string) {
  const pending = publicFetch(publicUrl, path, { headers: { upgrade: "websocket" } });
  const head = await agent.next("request_head", (frame) => frame.target === path);
  agent.send({ type: "response_head", stream: head.stream, status: 101, headers: [] });
  const response = await pending;
  expect(response.status).toBe(101);
  const ws = response.webSocket!;
  ws.accept();
  const received: string[] = [];
  ws.addEventListener("message", (event) => received.push(String(event.data)));
  return { ws, stream: head.stream, received };
}

describe("public WebSockets across hibernation", () => {
  it("a client connecting after the session object hibernated never shares a stream with an earlier client", async () => {
    const { agent, welcome } = await connectAgent();
    agents.push(agent);
    const tunnel = await agent.startOk();
    const first = await openPublicSocket(agent, tunnel.public_url!, "/first");
    await markInstance(welcome.session_id);

    await hibernate(agent, welcome.session_id);

    const second = await openPublicSocket(agent, tunnel.public_url!, "/second");
    expect(second.stream).not.toBe(first.stream);

    // Each client's messages reach the agent on its own stream, and the agent's answers reach only their client.
    first.ws.send("from the first client");
    const fromFirst = await agent.next("ws_message");
    expect(new TextDecoder().decode(fromFirst.bytes)).toBe("from the first client");
    expect(fromFirst.stream).toBe(first.stream);
    second.ws.send("from the second client");
    const fromSecond = await agent.next("ws_message");
    expect(new TextDecoder().decode(fromSecond.bytes)).toBe("from the second client");
    expect(fromSecond.stream).toBe(second.stream);

    agent.send({ type: "ws_message", stream: second.stream, binary: false, bytes: new TextEncoder().encode("for the second client") });
    agent.send({ type: "ws_message", stream: first.stream, binary: false, bytes: new TextEncoder().encode("for the first client") });
    await expect.poll(() => [first.received, second.received]).toEqual([["for the first client"], ["for the second client"]]);
  }, 120_000);
});
