import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { AGENT_BODY_PATH, BODY_CHANNEL_MAX_BYTES, BODY_CHANNEL_MIN_BYTES } from "../../src/tunnels/protocol.ts";
import { AGENT_VERSION } from "../../src/agent/version.ts";
import { FakeEdge } from "./support/fake-edge.ts";
import { patternBytes, startUpstream, type Upstream } from "./support/upstream.ts";

const CHANNEL = { object: "ab".repeat(32), token: "T".repeat(43), max_bytes: BODY_CHANNEL_MAX_BYTES };
let edge: FakeEdge;
let upstream: Upstream;
const agents: Agent[] = [];

beforeAll(async () => {
  edge = await FakeEdge.start();
  upstream = await startUpstream();
});

afterAll(async () => {
  await edge.close();
  await upstream.close();
});

afterEach(async () => {
  edge.bodyChannel = undefined;
  edge.refuseBody = undefined;
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  edge.channelPosts.length = 0;
  edge.channelsBegun.clear();
});

/** An agent with one tunnel `web` to `port`, on a fake edge that offers a body channel (unless `offered` is false). */
async function agentOn(port: number, offered: boolean | typeof CHANNEL = true) {
  edge.bodyChannel = offered === true ? CHANNEL : offered === false ? undefined : offered;
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0", tunnels: { web: { proto: "http", addr: port } } });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const tunnels = Object.entries(parsed.config.tunnels).map(([name, definition]) => ({ name, definition }));
  const agent = await startAgent({ config: parsed.config, tunnels, backoff: { initialMs: 50, maxMs: 200 } });
  agents.push(agent);
  await agent.ready;
  const session = await edge.session(edge.sessions.length - 1);
  return { agent, session, tunnelId: edge.tunnelId("web") };
}

/** A local service that sends a head and the first `sent` bytes of a `length`-byte body, then holds the rest. */
async function holdingService(length: number, sent: number) {
  const responses: ServerResponse[] = [];
  const server = createServer((_request, response) => {
    responses.push(response);
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(length) });
    response.write(patternBytes(sent));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    responses,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("body channels (agent side)", () => {
  it(`send a response body of at least ${BODY_CHANNEL_MIN_BYTES} bytes as one POST with the session's token, and no data frames`, async () => {
    const { agent, session, tunnelId } = await agentOn(upstream.port);
    const length = BODY_CHANNEL_MIN_BYTES + 12_345;
    const relayed = await session.relay(tunnelId, { target: `/bytes/${length}` });
    expect(relayed).toMatchObject({ status: 200, viaChannel: true });
    expect(relayed.body.equals(patternBytes(length))).toBe(true);
    const post = await edge.channelPost(session.lastStream);
    expect(post.url.pathname).toBe(AGENT_BODY_PATH);
    expect(Object.fromEntries(post.url.searchParams)).toEqual({ object: CHANNEL.object, stream: String(session.lastStream) });
    expect(post.headers).toMatchObject({
      authorization: `Bearer ${CHANNEL.token}`,
      "content-length": String(length),
      "user-agent": `tollgate-agent/${AGENT_VERSION}`,
    });
    expect(session.pendingData(session.lastStream)).toBe(0);
    // the inspector captured the exchange as complete, body size and all
    await expect
      .poll(async () => {
        const listed = (await (await fetch(`${agent.apiUrl}/api/requests/http`)).json()) as { requests: Array<{ response?: { status_code: number } }> };
        return listed.requests[0]?.response?.status_code;
      })
      .toBe(200);
  });

  it("keep frames for smaller bodies, HEAD and bodiless statuses", async () => {
    const { session, tunnelId } = await agentOn(upstream.port);
    const small = await session.relay(tunnelId, { target: `/bytes/${BODY_CHANNEL_MIN_BYTES - 1}` });
    expect(small.viaChannel).toBeUndefined();
    expect(small.body.equals(patternBytes(BODY_CHANNEL_MIN_BYTES - 1))).toBe(true);
    const head = await session.relay(tunnelId, { method: "HEAD", target: `/bytes/${BODY_CHANNEL_MIN_BYTES * 2}` });
    expect(head.status).toBe(200);
    expect(head.viaChannel).toBeUndefined();
    const bodiless = await session.relay(tunnelId, { target: "/status/204" });
    expect(bodiless.status).toBe(204);
    expect(bodiless.viaChannel).toBeUndefined();
    expect(edge.channelPosts).toEqual([]);
  });

  it("keep frames for a body larger than the welcome's max_bytes", async () => {
    const { session, tunnelId } = await agentOn(upstream.port, { ...CHANNEL, max_bytes: BODY_CHANNEL_MIN_BYTES });
    const relayed = await session.relay(tunnelId, { target: `/bytes/${BODY_CHANNEL_MIN_BYTES + 1}` });
    expect(relayed.viaChannel).toBeUndefined();
    expect(relayed.body.equals(patternBytes(BODY_CHANNEL_MIN_BYTES + 1))).toBe(true);
    const atMost = await session.relay(tunnelId, { target: `/bytes/${BODY_CHANNEL_MIN_BYTES}` });
    expect(atMost.viaChannel).toBe(true);
  });

  it("are not used when the edge does not offer one", async () => {
    const { session, tunnelId } = await agentOn(upstream.port, false);
    const relayed = await session.relay(tunnelId, { target: `/bytes/${BODY_CHANNEL_MIN_BYTES * 2}` });
    expect(relayed.viaChannel).toBeUndefined();
    expect(relayed.body.equals(patternBytes(BODY_CHANNEL_MIN_BYTES * 2))).toBe(true);
    expect(edge.channelPosts).toEqual([]);
  });

  it("reset the stream with the edge's reason when it refuses the POST", async () => {
    const { session, tunnelId } = await agentOn(upstream.port);
    edge.refuseBody = { status: 409, body: { msg: "The body channel did not complete: the public client went away" } };
    const relayed = session.relay(tunnelId, { target: `/bytes/${BODY_CHANNEL_MIN_BYTES}` });
    const reset = await session.next("reset", (frame) => frame.stream === session.lastStream);
    expect(reset).toMatchObject({
      code: "cancelled",
      message: "the edge did not take the response body (HTTP 409): The body channel did not complete: the public client went away",
    });
    await relayed;
  });

  it("abort the POST and the local response when the edge resets the stream mid-body", async () => {
    const service = await holdingService(BODY_CHANNEL_MIN_BYTES * 4, 64 * 1024);
    try {
      const { session, tunnelId } = await agentOn(service.port);
      void session.relay(tunnelId, { target: "/held" }).catch(() => undefined);
      await expect.poll(() => edge.channelsBegun.has(String(session.lastStream))).toBe(true);
      const closed = new Promise<void>((resolve) => service.responses[0]!.on("close", () => resolve()));
      session.send({ type: "reset", stream: session.lastStream, code: "cancelled", message: "the public client went away" });
      const post = await edge.channelPost(session.lastStream);
      expect(post.aborted).toBe(true);
      expect(post.body.byteLength).toBeLessThan(BODY_CHANNEL_MIN_BYTES * 4);
      await closed;
    } finally {
      await service.close();
    }
  });

  it("abort the POST and reset the stream when the local service breaks off mid-body", async () => {
    const service = await holdingService(BODY_CHANNEL_MIN_BYTES * 4, 64 * 1024);
    try {
      const { session, tunnelId } = await agentOn(service.port);
      const relayed = session.relay(tunnelId, { target: "/breaks" });
      await expect.poll(() => edge.channelsBegun.has(String(session.lastStream))).toBe(true);
      service.responses[0]!.destroy();
      const reset = await session.next("reset", (frame) => frame.stream === session.lastStream);
      expect(reset).toMatchObject({ code: "upstream_error" });
      const post = await edge.channelPost(session.lastStream);
      expect(post.aborted).toBe(true);
      await relayed.catch(() => undefined);
    } finally {
      await service.close();
    }
  });
});
