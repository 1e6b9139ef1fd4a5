import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import type { ExchangeTap } from "../../src/agent/edge/exchange.ts";
import { LocalForwarder } from "../../src/agent/edge/local-forwarder.ts";
import type { Frame } from "../../src/relay/index.ts";
import { AGENT_BODY_PATH, BODY_CHANNEL_MAX_BYTES, BODY_CHANNEL_MIN_BYTES } from "../../src/relay/index.ts";
import { AGENT_VERSION } from "../../src/agent/version.ts";
import { FakeEdge } from "./support/fake-edge.ts";
import { patternBytes, startUpstream, type Upstream } from "../support/upstream.ts";

/** Ceiling for what settles after a few socket round trips (generous for a busy machine). */
const SETTLES = { timeout: 10_000, interval: 20 };
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

/** A forwarder on its own (no session), its channel on the fake edge, and a tap counting what its observer hears. */
function forwarderWithTap(port: number) {
  const calls = { head: 0, bodyBytes: 0, end: 0, close: [] as Array<{ code: string } | undefined> };
  const tap: ExchangeTap = {
    open: () => ({
      onResponseHead: () => void calls.head++,
      onResponseBody: (chunk) => void (calls.bodyBytes += chunk.byteLength),
      onResponseEnd: () => void calls.end++,
      onClose: (outcome) => void calls.close.push(outcome.error),
    }),
  };
  const frames: Frame[] = [];
  const forwarder = new LocalForwarder({
    send: (frame) => frames.push(frame),
    lookup: (id) => (id === "tn_tap" ? { id, name: "tap", url: new URL(`http://127.0.0.1:${port}`), inspect: true, taps: [tap] } : undefined),
    sessionKey: () => "ts_tap",
    bodyChannel: () => ({
      url: `${edge.url}${AGENT_BODY_PATH}?object=${CHANNEL.object}`,
      token: CHANNEL.token,
      maxBytes: BODY_CHANNEL_MAX_BYTES,
      userAgent: "test",
    }),
  });
  // a request without a body: its head, then the end of its (empty) body, as the edge sends them
  const open = (stream: number, target: string) => {
    forwarder.onFrame({ type: "request_head", stream, tunnel_id: "tn_tap", method: "GET", target, headers: [], client_addr: "203.0.113.7", scheme: "http" });
    forwarder.onFrame({ type: "end", stream, count: 0 });
  };
  return { forwarder, frames, calls, open };
}

describe("body channels (agent side)", () => {
  it("tell the exchange's observers of the head, every body byte, the end and the close, once each", async () => {
    const { forwarder, frames, calls, open } = forwarderWithTap(upstream.port);
    const length = BODY_CHANNEL_MIN_BYTES * 2;
    open(1, `/bytes/${length}`);
    await expect.poll(() => calls.close.length, SETTLES).toBe(1);
    expect(calls).toEqual({ head: 1, bodyBytes: length, end: 1, close: [undefined] });
    expect(frames.map((frame) => frame.type)).toEqual(["response_head"]);
    expect((await edge.channelPost(1)).body.equals(patternBytes(length))).toBe(true);
    expect(forwarder.size).toBe(0);
  });

  it("close a refused channel's exchange once, with the error and without an end", async () => {
    edge.refuseBody = { status: 409, body: { msg: "The body channel did not complete: the public client went away" } };
    const { forwarder, frames, calls, open } = forwarderWithTap(upstream.port);
    open(1, `/bytes/${BODY_CHANNEL_MIN_BYTES}`);
    await expect.poll(() => calls.close.length, SETTLES).toBe(1);
    expect(calls.end).toBe(0);
    expect(calls.close[0]).toMatchObject({ code: "cancelled" });
    expect(frames.map((frame) => frame.type)).toEqual(["response_head", "reset"]);
    expect(forwarder.size).toBe(0);
  });

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
    // the inspector captured the exchange with its response
    await expect
      .poll(async () => {
        const listed = (await (await fetch(`${agent.apiUrl}/api/requests/http`)).json()) as { requests: Array<{ response?: { status_code: number } }> };
        return listed.requests[0]?.response?.status_code;
      }, SETTLES)
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

  it("cut a long refusal reason to 300 characters, so the reset stays within the protocol's 4096", async () => {
    const { session, tunnelId } = await agentOn(upstream.port);
    edge.refuseBody = { status: 409, body: { msg: "x".repeat(3_000) } };
    const relayed = session.relay(tunnelId, { target: `/bytes/${BODY_CHANNEL_MIN_BYTES}` });
    const reset = await session.next("reset", (frame) => frame.stream === session.lastStream);
    expect(reset.message).toBe(`the edge did not take the response body (HTTP 409): ${"x".repeat(300)}`);
    await relayed;
  });

  it("abort the POST and the local response when the edge resets the stream mid-body", async () => {
    const service = await holdingService(BODY_CHANNEL_MIN_BYTES * 4, 64 * 1024);
    try {
      const { session, tunnelId } = await agentOn(service.port);
      void session.relay(tunnelId, { target: "/held" }).catch(() => undefined);
      await expect.poll(() => edge.channelsBegun.has(String(session.lastStream)), SETTLES).toBe(true);
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
      await expect.poll(() => edge.channelsBegun.has(String(session.lastStream)), SETTLES).toBe(true);
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
