import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_AGENT_STREAMS, MAX_BODY_CHANNELS, MAX_LOCAL_CONNECTIONS } from "../../src/agent/edge/connection-limits.ts";
import { LocalForwarder, type LocalTunnel } from "../../src/agent/edge/local-forwarder.ts";
import { sendToLocal } from "../../src/agent/edge/replay.ts";
import { AGENT_BODY_PATH, BODY_CHANNEL_MAX_BYTES, BODY_CHANNEL_MIN_BYTES, type Frame, type FrameOf } from "../../src/relay/index.ts";
import { FakeEdge } from "./support/fake-edge.ts";
import { patternBytes } from "../support/upstream.ts";

/** Ceiling for what settles after some hundred socket round trips (generous for a busy machine). */
const SETTLES = { timeout: 20_000, interval: 20 };
const CHANNEL = { object: "cd".repeat(32), token: "U".repeat(43) };
let edge: FakeEdge;

beforeAll(async () => {
  edge = await FakeEdge.start();
});

afterAll(async () => {
  await edge.close();
});

/**
 * A local service that holds every request until `release()`: then it answers each with `length` bytes (sending
 * the first 64 KiB at once, so large responses have begun). It counts the connections open to it, and the most at once.
 */
async function holdingService(length: number) {
  const held: Array<{ request: IncomingMessage; response: ServerResponse }> = [];
  let open = 0;
  let most = 0;
  let releasing = false;
  const first = length > 64 * 1024 ? 64 * 1024 : 0;
  const finish = (response: ServerResponse) => response.end(patternBytes(length - first, first));
  const server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(length) });
    if (first) response.write(patternBytes(first));
    if (releasing) finish(response);
    else held.push({ request, response });
  });
  server.on("connection", (socket) => {
    most = Math.max(most, ++open);
    socket.on("close", () => open--);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    held,
    get most() {
      return most;
    },
    /** Answers the held requests, and any that come later. */
    release() {
      releasing = true;
      for (const { response } of held.splice(0)) finish(response);
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A forwarder on its own (as one agent session), relaying to `port`; with `channel`, the fake edge's body channel is offered. */
function forwarderTo(port: number, channel = false) {
  const frames: Frame[] = [];
  const tunnel: LocalTunnel = { id: "tn_limits", name: "limits", url: new URL(`http://127.0.0.1:${port}`), inspect: false, taps: [] };
  const forwarder = new LocalForwarder({
    send: (frame) => frames.push(frame),
    lookup: (id) => (id === tunnel.id ? tunnel : undefined),
    sessionKey: () => "ts_limits",
    bodyChannel: channel
      ? () => ({ url: `${edge.url}${AGENT_BODY_PATH}?object=${CHANNEL.object}`, token: CHANNEL.token, maxBytes: BODY_CHANNEL_MAX_BYTES, userAgent: "test" })
      : undefined,
  });
  const open = (stream: number) => {
    forwarder.onFrame({
      type: "request_head",
      stream,
      tunnel_id: tunnel.id,
      method: "GET",
      target: `/${stream}`,
      headers: [],
      client_addr: "203.0.113.7",
      scheme: "http",
    });
    forwarder.onFrame({ type: "end", stream, count: 0 });
  };
  const of = <T extends Frame["type"]>(type: T, stream: number) =>
    frames.filter((frame): frame is FrameOf<T> => frame.type === type && "stream" in frame && frame.stream === stream);
  return { forwarder, frames, tunnel, open, of };
}

const streams = (count: number, from = 1) => Array.from({ length: count }, (_, i) => from + i);

describe("the agent's bounds on what it holds open", () => {
  it(`serves ${MAX_AGENT_STREAMS} streams at once; one more is reset with too_many_streams before anything is opened for it, the others carry on`, async () => {
    const service = await holdingService(100);
    try {
      const { forwarder, open, of } = forwarderTo(service.port);
      for (const stream of streams(MAX_AGENT_STREAMS)) open(stream);
      const extra = MAX_AGENT_STREAMS + 1;
      open(extra);
      expect(of("reset", extra)).toEqual([
        { type: "reset", stream: extra, code: "too_many_streams", message: `the agent is serving ${MAX_AGENT_STREAMS} streams at once, the most it takes` },
      ]);
      await expect.poll(() => service.held.length, SETTLES).toBe(MAX_AGENT_STREAMS);
      expect(service.held.map(({ request }) => request.url)).not.toContain(`/${extra}`);
      service.release();
      await expect.poll(() => forwarder.size, SETTLES).toBe(0);
      for (const stream of streams(MAX_AGENT_STREAMS)) {
        expect(of("response_head", stream)).toHaveLength(1);
        expect(of("end", stream)).toHaveLength(1);
        expect(of("reset", stream)).toEqual([]);
      }
      // with the streams done, it takes more
      open(extra + 1);
      await expect.poll(() => of("end", extra + 1).length, SETTLES).toBe(1);
    } finally {
      await service.close();
    }
  });

  it(`keeps at most ${MAX_BODY_CHANNELS} body channels open; one more large response goes in data frames, the others carry on`, async () => {
    const length = BODY_CHANNEL_MIN_BYTES * 2;
    const service = await holdingService(length);
    try {
      const { forwarder, open, of } = forwarderTo(service.port, true);
      for (const stream of streams(MAX_BODY_CHANNELS)) open(stream);
      await expect.poll(() => edge.channelsBegun.size, SETTLES).toBe(MAX_BODY_CHANNELS);
      const extra = MAX_BODY_CHANNELS + 1;
      open(extra);
      await expect.poll(() => of("data", extra).length, SETTLES).toBeGreaterThan(0);
      expect(of("response_head", extra)[0]).not.toHaveProperty("body_channel");
      expect(edge.channelsBegun.has(String(extra))).toBe(false);
      service.release();
      // the channels' POSTs end whole; the framed one waits on its window, which this test never opens
      await expect.poll(() => edge.channelPosts.length, SETTLES).toBe(MAX_BODY_CHANNELS);
      expect(edge.channelPosts.every((post) => !post.aborted && post.body.equals(patternBytes(length)))).toBe(true);
      await expect.poll(() => forwarder.size, SETTLES).toBe(1);
      for (const stream of streams(MAX_BODY_CHANNELS)) expect(of("reset", stream)).toEqual([]);
      forwarder.abortAll("done");
    } finally {
      edge.channelPosts.length = 0;
      edge.channelsBegun.clear();
      await service.close();
    }
  });

  it(`opens at most ${MAX_LOCAL_CONNECTIONS} connections to local services; a request past it waits for one to free`, async () => {
    const service = await holdingService(100);
    try {
      const { forwarder, tunnel, open, of } = forwarderTo(service.port);
      for (const stream of streams(MAX_LOCAL_CONNECTIONS)) open(stream);
      await expect.poll(() => service.held.length, SETTLES).toBe(MAX_LOCAL_CONNECTIONS);
      // a replay shares the process's connections: it gets one once the held requests are answered
      const replayed = sendToLocal(tunnel, { method: "GET", target: "/replayed", headers: [] });
      service.release();
      expect(await replayed).toMatchObject({ ok: true, status: 200 });
      await expect.poll(() => forwarder.size, SETTLES).toBe(0);
      for (const stream of streams(MAX_LOCAL_CONNECTIONS)) expect(of("end", stream)).toHaveLength(1);
      expect(service.most).toBe(MAX_LOCAL_CONNECTIONS);
    } finally {
      await service.close();
    }
  });

  it("does not hold requests to a second local address back behind idle connections to the first", async () => {
    const first = await holdingService(100);
    const second = await holdingService(100);
    try {
      const { forwarder, open } = forwarderTo(first.port);
      first.release();
      for (const stream of streams(MAX_LOCAL_CONNECTIONS)) open(stream);
      await expect.poll(() => forwarder.size, SETTLES).toBe(0);
      // the first address's connections are idle in the pool now; the second's requests all connect at once
      const other = forwarderTo(second.port);
      for (const stream of streams(MAX_AGENT_STREAMS)) other.open(stream);
      await expect.poll(() => second.held.length, SETTLES).toBe(MAX_AGENT_STREAMS);
      second.release();
      await expect.poll(() => other.forwarder.size, SETTLES).toBe(0);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
