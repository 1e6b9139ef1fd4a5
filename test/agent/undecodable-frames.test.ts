/**
 * A frame from the edge that the agent cannot decode (issue 41): it resets that stream only, with a reset the
 * edge hears, and the session and its other streams go on. Only a message whose framing is broken closes it.
 */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { encodeFrame, MAX_HEADER_FIELDS, MAX_HEADER_VALUE_CHARS, MAX_STATUS_TEXT_CHARS, type Frame } from "../../src/relay/index.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";
import { FakeEdge, type FakeSession } from "./support/fake-edge.ts";

/** Ceilings for a busy machine, not behaviour under test (vi.waitFor gives up after 1 s by default). */
const SETTLES = { timeout: 10_000, interval: 20 };

let edge: FakeEdge;
let upstream: Upstream;
let agent: Agent | undefined;

beforeAll(async () => {
  edge = await FakeEdge.start();
  upstream = await startUpstream();
});

afterAll(async () => {
  await edge.close();
  await upstream.close();
});

afterEach(async () => {
  await agent?.stop();
  agent = undefined;
});

/** An agent online with tunnel `web` (to `port`, the upstream's unless said), and its session at the fake edge. */
async function online(port: number = upstream.port): Promise<{ session: FakeSession; tunnelId: string }> {
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: false, tunnels: { web: { addr: port } } });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const tunnels = Object.entries(parsed.config.tunnels).map(([name, definition]) => ({ name, definition }));
  agent = await startAgent({ config: parsed.config, tunnels, backoff: { initialMs: 50, maxMs: 200 } });
  await agent.ready;
  await expect.poll(() => agent?.tunnels.get("web")?.state).toBe("online");
  return { session: await edge.session(edge.sessions.length - 1), tunnelId: edge.tunnelId("web") };
}

const head = (stream: number, tunnelId: string, headers: Array<[string, string]> = []): Frame => ({
  type: "request_head",
  stream,
  tunnel_id: tunnelId,
  method: "GET",
  target: "/",
  headers: [["host", "fake.localhost"], ...headers],
  client_addr: "203.0.113.7",
  scheme: "http",
});

describe("a frame the agent cannot decode", () => {
  it("a request head past the bounds resets its stream; the other stream of the message and the session go on, and it is logged once", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      const { session, tunnelId } = await online();
      const tooBig = head(101, tunnelId, [["x-big", "v".repeat(MAX_HEADER_VALUE_CHARS + 1)]]);
      session.ws.send(Buffer.concat([encodeFrame(tooBig), encodeFrame(head(102, tunnelId)), encodeFrame({ type: "end", stream: 102, count: 0 })]));

      const reset = await session.next("reset", (frame) => frame.stream === 101);
      expect(reset).toEqual({
        type: "reset",
        stream: 101,
        code: "protocol_error",
        message: "the agent could not decode a request_head frame: request_head frame: headers.1.1: Too big: expected string to have <=16384 characters",
      });
      expect(await session.next("response_head", (frame) => frame.stream === 102)).toMatchObject({ status: 200 });
      expect((await session.relay(tunnelId, {})).status).toBe(200);
      expect(session.closed).toBe(false);
      expect(agent?.session.status).toMatchObject({ state: "online", reconnects: 0 });
      expect(warn.mock.calls.map(([line]) => line)).toEqual([
        "relay: 1 undecodable stream frames from the edge reset since last report (last: request_head frame: headers.1.1: Too big: expected string to have <=16384 characters)",
      ]);
    } finally {
      warn.mockRestore();
    }
  });

  it("a data frame that does not decode ends its open stream at the agent and resets it at the edge", async () => {
    const { session, tunnelId } = await online();
    session.send({ ...head(201, tunnelId), method: "POST", target: "/echo" } as Frame);
    // a data frame of 2 payload bytes: no room for its sequence number
    const broken = Buffer.from([1, 18, 0, 0, 0, 201, 0, 0, 0, 2, 7, 7]);
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    session.ws.send(broken);
    expect(await session.next("reset", (frame) => frame.stream === 201)).toMatchObject({
      code: "protocol_error",
      message: "the agent could not decode a data frame: data frame must start with a 4-byte sequence number",
    });
    await vi.waitFor(() => expect(agent?.forwarder.size).toBe(0), SETTLES);
    expect((await session.relay(tunnelId, {})).status).toBe(200);
    expect(session.closed).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    warn.mockRestore();
  });

  it("a message whose framing is broken still closes the session", async () => {
    const { session } = await online();
    session.ws.send(Buffer.from([1, 16, 0, 0, 0, 1, 0, 0, 9, 9]));
    await vi.waitFor(() => expect(session.closed).toBe(true), SETTLES);
  });
});

describe("a local response head the edge could not take", () => {
  let local: Server;
  let port: number;

  beforeAll(async () => {
    local = createServer((request, response) => {
      if (request.url === "/many") {
        for (let i = 0; i <= MAX_HEADER_FIELDS; i++) response.setHeader(`x-${i}`, "v");
        response.end("many");
      } else {
        response.writeHead(200, "R".repeat(MAX_STATUS_TEXT_CHARS + 44));
        response.end("long reason");
      }
    });
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    port = (local.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => local.close(resolve));
  });

  it("past the header bounds is reset upstream_error by the agent, saying why, instead of failing at the edge", async () => {
    const { session, tunnelId } = await online(port);
    const answer = await session.relay(tunnelId, { target: "/many" });
    expect(answer.reset).toEqual({
      code: "upstream_error",
      // Node adds Date and Content-Length to the service's own fields
      message: expect.stringMatching(
        new RegExp(`^the response head from http://localhost:${port} cannot be relayed: it has 51\\d header fields, more than ${MAX_HEADER_FIELDS}$`),
      ),
    });
    expect((await session.relay(tunnelId, { target: "/reason" })).status).toBe(200);
  });

  it("with a reason phrase past 256 characters is relayed with the phrase cut", async () => {
    const { session, tunnelId } = await online(port);
    session.send({ ...head(301, tunnelId), target: "/reason" } as Frame);
    session.send({ type: "end", stream: 301, count: 0 });
    expect(await session.next("response_head", (frame) => frame.stream === 301)).toMatchObject({ status: 200, status_text: "R".repeat(MAX_STATUS_TEXT_CHARS) });
  });
});
