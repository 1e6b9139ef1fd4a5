import { createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { sendToLocal } from "../../src/agent/edge/replay.ts";
import type { ExchangeInfo } from "../../src/agent/edge/exchange.ts";
import { IDLE_LOCAL_CONNECTION_MS } from "../../src/agent/edge/connection-limits.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { INITIAL_STREAM_WINDOW, LARGE_DATA_CHUNK, MAX_DATA_CHUNK, type Frame, type FrameOf } from "../../src/relay/index.ts";
import { message } from "../shared/frames.ts";
import { FakeEdge } from "./support/fake-edge.ts";
import { ngrokClient, type NgrokClientError } from "./support/ngrok-client.ts";
import { closedPort, patternBytes, sha256, startUpstream, type Upstream } from "../support/upstream.ts";

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
  edge.refuse = undefined;
  edge.maxDataChunk = undefined;
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
});

async function agentWith(config: Record<string, unknown> = {}, options: Partial<Parameters<typeof startAgent>[0]> = {}): Promise<Agent> {
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0", ...config });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const tunnels = Object.entries(parsed.config.tunnels).map(([name, definition]) => ({ name, definition }));
  const agent = await startAgent({ config: parsed.config, tunnels, backoff: { initialMs: 50, maxMs: 200 }, ...options });
  agents.push(agent);
  return agent;
}

async function api(agent: Agent, path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${agent.apiUrl}${path}`, init);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

const json = (body: unknown): RequestInit => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** Ceiling for agent state that settles after a few frames or reconnect attempts. */
const SETTLES = { timeout: 5_000, interval: 20 };

describe("agent API with the published ngrok client", () => {
  it("starts, lists, details and stops tunnels", async () => {
    const agent = await agentWith();
    await agent.ready;
    const client = ngrokClient(agent.apiUrl!);
    const started = await client.startTunnel({ name: "web", proto: "http", addr: upstream.port });
    expect(started).toMatchObject({
      name: "web",
      uri: "/api/tunnels/web",
      public_url: expect.stringMatching(/^http:\/\/.+\.localhost:8787$/),
      proto: "http",
      config: { addr: `http://localhost:${upstream.port}`, inspect: true },
      metrics: { conns: { count: 0, gauge: 0, rate1: 0, rate5: 0, rate15: 0, p50: 0, p90: 0, p95: 0, p99: 0 }, http: { count: 0 } },
    });
    expect((await client.listTunnels()).tunnels.map((tunnel) => tunnel.name)).toEqual(["web"]);
    expect(await client.tunnelDetail("web")).toMatchObject({ name: "web", public_url: started.public_url });
    expect(await client.stopTunnel("web")).toBe(true);
    const error = (await client.tunnelDetail("web").catch((e: unknown) => e)) as NgrokClientError;
    expect(error.response.statusCode).toBe(404);
    expect(error.body).toMatchObject({ error_code: 100, status_code: 404, msg: "tunnel 'web' not found" });
    expect((await client.listTunnels()).tunnels).toEqual([]);
  });

  it("answers an index and the session status", async () => {
    const agent = await agentWith();
    await agent.ready;
    expect((await api(agent, "/api/")).body.resources.tunnels.uri).toBe("/api/tunnels");
    const status = (await api(agent, "/api/status")).body;
    expect(status).toMatchObject({
      status: "online",
      agent_version: agent.version,
      session: { id: expect.stringMatching(/^ts_fake/), server_addr: edge.url, region: "test" },
    });
  });
});

describe("agent API errors", () => {
  it.each([
    [{ name: "x", addr: 80, colour: "red" }, "colour: unknown key"],
    [{ name: "x", addr: 80, proto: "ftp" }, 'proto: must be one of "http", "tcp", "tls"'],
    [{ name: "x", proto: "http" }, "addr: is required"],
    [{ name: "x", addr: "nowhere" }, 'addr: "nowhere" needs a port (host:port)'],
    [{ addr: 80 }, "name: is required"],
    [{ name: "x", addr: 80, traffic_policy: { inbound: [{ actions: [{ type: "nope" }] }] } }, "traffic_policy.inbound[0].actions[0].type: unknown action type"],
  ])("an invalid definition %j answers 400 with error_code 102 naming the field", async (definition, detail) => {
    const agent = await agentWith();
    await agent.ready;
    const { status, body } = await api(agent, "/api/tunnels", json(definition));
    expect(status).toBe(400);
    expect(body).toMatchObject({ error_code: 102, status_code: 400, msg: "invalid tunnel definition" });
    expect(body.details.err).toContain(detail);
  });

  it("the edge refusing (tcp) answers 502 with error_code 103 and the edge's reason", async () => {
    const agent = await agentWith();
    await agent.ready;
    const { status, body } = await api(agent, "/api/tunnels", json({ name: "ssh", proto: "tcp", addr: 22 }));
    expect(status).toBe(502);
    expect(body).toMatchObject({ error_code: 103, status_code: 502 });
    expect(body.details.err).toBe("unsupported_proto: tcp tunnels are not supported");
  });

  it("a duplicate name answers 409 with error_code 104", async () => {
    const agent = await agentWith();
    await agent.ready;
    expect((await api(agent, "/api/tunnels", json({ name: "web", addr: upstream.port }))).status).toBe(201);
    const { status, body } = await api(agent, "/api/tunnels", json({ name: "web", addr: upstream.port }));
    expect(status).toBe(409);
    expect(body).toMatchObject({ error_code: 104, msg: "a tunnel named 'web' is already running" });
  });

  it("takes JSON bodies only", async () => {
    const agent = await agentWith();
    await agent.ready;
    const form = await api(agent, "/api/tunnels", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "name=x&addr=80" });
    expect(form.status).toBe(415);
    expect(form.body.error_code).toBe(105);
    const broken = await api(agent, "/api/tunnels", { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ error_code: 102, details: { err: expect.stringContaining("not valid JSON") } });
  });

  it("refuses a Host that is not loopback or allowed (DNS rebinding), with a clear error", async () => {
    const agent = await agentWith({ web_allow_hosts: ["agent.test"] });
    const { port } = new URL(agent.apiUrl!);
    const call = (host: string) =>
      new Promise<number>((resolve, reject) => {
        import("node:http").then(({ request }) =>
          request({ host: "127.0.0.1", port, path: "/api/tunnels", headers: { host } }, (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          })
            .on("error", reject)
            .end(),
        );
      });
    expect(await call("evil.example")).toBe(403);
    expect(await call(`evil.example:${port}`)).toBe(403);
    expect(await call(`localhost:${port}`)).toBe(200);
    expect(await call(`[::1]:${port}`)).toBe(200);
    expect(await call("agent.test")).toBe(200);
  });
});

describe("relaying to the local service", () => {
  it("forwards method, path, query and headers, adds X-Forwarded-*, and counts the exchange", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const answer = await session.relay(edge.tunnelId("web"), {
      method: "PATCH",
      target: "/a/b?c=1",
      headers: [["x-custom", "1"]],
      body: Buffer.from("hello"),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.filter(([name]) => name.toLowerCase() === "set-cookie")).toEqual([
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
    ]);
    const echoed = JSON.parse(answer.body.toString());
    expect(echoed).toMatchObject({ method: "PATCH", url: "/a/b?c=1", bodyLength: 5 });
    expect(echoed.headers).toMatchObject({
      host: "fake.localhost",
      "x-custom": "1",
      "x-forwarded-for": "203.0.113.7",
      "x-forwarded-proto": "http",
      "x-forwarded-host": "fake.localhost",
    });
    await expect.poll(() => agent.tunnels.get("web")!.metrics.snapshot().http.count, SETTLES).toBe(1);
    const metrics = agent.tunnels.get("web")!.metrics.snapshot();
    expect(metrics.conns).toMatchObject({ count: 1, gauge: 0 });
    expect(metrics.http.p50).toBeGreaterThan(0);
  });

  it("replays a request to the local service through the same taps, marked as a replay", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const seen: ExchangeInfo[] = [];
    agent.tunnels.addTap({ open: (info) => void seen.push(info) });
    const answer = await sendToLocal(agent.tunnels.get("web")!, {
      method: "POST",
      target: "/replayed?x=1",
      headers: [["x-a", "1"]],
      body: Buffer.from("again"),
    });
    expect(answer.ok && answer.status).toBe(200);
    expect(answer.ok && JSON.parse(Buffer.from(answer.body).toString())).toMatchObject({
      method: "POST",
      url: "/replayed?x=1",
      bodyLength: 5,
      headers: { "x-a": "1" },
    });
    expect(seen).toMatchObject([{ tunnelName: "web", method: "POST", target: "/replayed?x=1", replay: true }]);
    expect(agent.tunnels.get("web")!.metrics.snapshot().http.count).toBe(1);
  });

  it("closes an idle connection to the local service before a Node server would (never reusing one being closed)", async () => {
    // A local service that keeps idle connections for a minute: only the agent closes them.
    const open = new Set<Socket>();
    const service = createServer((_request, response) => response.end("ok"));
    service.keepAliveTimeout = 60_000;
    service.on("connection", (socket) => {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
    });
    await new Promise<void>((resolve) => service.listen(0, "127.0.0.1", resolve));
    try {
      const agent = await agentWith({ tunnels: { web: { addr: (service.address() as AddressInfo).port } } });
      await agentReady(agent, ["web"]);
      const session = await edge.session(edge.sessions.length - 1);
      expect((await session.relay(edge.tunnelId("web"), {})).status).toBe(200);
      expect(open.size).toBe(1);
      await vi.waitFor(() => expect(open.size).toBe(0), { timeout: IDLE_LOCAL_CONNECTION_MS + 20_000, interval: 100 });
    } finally {
      service.closeAllConnections();
      await new Promise((resolve) => service.close(resolve));
    }
  });

  it("resets with upstream_unreachable when nothing listens on addr", async () => {
    const port = await closedPort();
    const agent = await agentWith({ tunnels: { web: { addr: port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const answer = await session.relay(edge.tunnelId("web"), {});
    expect(answer.reset?.code).toBe("upstream_unreachable");
    expect(answer.reset?.message).toContain(`could not connect to http://localhost:${port}`);
  });

  it("resets with upstream_timeout when the local service does not answer in time", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } }, { responseTimeoutMs: 200 });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const answer = await session.relay(edge.tunnelId("web"), { target: "/delay/2000" });
    expect(answer.reset).toEqual({ code: "upstream_timeout", message: `http://localhost:${upstream.port} did not answer within 0.2 s` });
  });

  it("stops sending a response the edge does not acknowledge, while other streams go on", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const tunnelId = edge.tunnelId("web");
    const stalled = session.relay(tunnelId, { target: `/bytes/${4 * INITIAL_STREAM_WINDOW}` }, { ackResponse: false, timeoutMs: 1500 });
    const stalledStream = session.lastStream;
    const other = await session.relay(tunnelId, { target: `/bytes/${2 * INITIAL_STREAM_WINDOW}` });
    expect(sha256(other.body)).toBe(sha256(patternBytes(2 * INITIAL_STREAM_WINDOW)));
    await expect(stalled).rejects.toThrow(/within 1500 ms/);
    expect(session.pendingData(stalledStream)).toBeLessThanOrEqual(INITIAL_STREAM_WINDOW);
  });
  it("sends response data frames as large as the edge's welcome allows, within the window, the body whole", async () => {
    edge.maxDataChunk = LARGE_DATA_CHUNK;
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const size = 6 * INITIAL_STREAM_WINDOW + 123;
    const answer = await session.relay(edge.tunnelId("web"), { target: `/bytes/${size}` });
    expect(sha256(answer.body)).toBe(sha256(patternBytes(size)));
    // the local service writes 64 KiB at a time: larger frames are pieces gathered in one turn
    expect(session.largestData).toBeGreaterThan(MAX_DATA_CHUNK);
    expect(session.largestData).toBeLessThanOrEqual(LARGE_DATA_CHUNK);
  });

  it("says in hello that it takes LARGE_DATA_CHUNK frames, and relays a request body sent in them whole", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    expect(session.hello?.max_data_chunk).toBe(LARGE_DATA_CHUNK);
    // within the agent's initial window: two frames, the first as large as it said it takes
    const body = Buffer.from(patternBytes(INITIAL_STREAM_WINDOW));
    const answer = await session.relay(edge.tunnelId("web"), { method: "POST", target: "/echo", body, frameSize: LARGE_DATA_CHUNK - 1 });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.toString("utf8"))).toMatchObject({ bodyLength: body.byteLength, bodySha256: sha256(body) });
  });

  it("holds frames to the edge's window even when they may be large", async () => {
    edge.maxDataChunk = LARGE_DATA_CHUNK;
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const stalled = session.relay(edge.tunnelId("web"), { target: `/bytes/${4 * INITIAL_STREAM_WINDOW}` }, { ackResponse: false, timeoutMs: 1500 });
    const stream = session.lastStream;
    await expect(stalled).rejects.toThrow(/within 1500 ms/);
    expect(session.pendingData(stream)).toBeLessThanOrEqual(INITIAL_STREAM_WINDOW);
  });

  it("keeps to MAX_DATA_CHUNK for an edge whose welcome says nothing of frame sizes (an older edge)", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    expect(agent.session.maxDataChunk).toBe(MAX_DATA_CHUNK);
    const session = await edge.session(edge.sessions.length - 1);
    const size = 3 * INITIAL_STREAM_WINDOW;
    // the fake edge decodes with MAX_DATA_CHUNK and throws on a larger frame
    const answer = await session.relay(edge.tunnelId("web"), { target: `/bytes/${size}` });
    expect(sha256(answer.body)).toBe(sha256(patternBytes(size)));
    expect(session.largestData).toBeLessThanOrEqual(MAX_DATA_CHUNK);
  });

  it("refuses a request head for a stream that is still open, and the open exchange goes on untouched", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const head = (target: string): FrameOf<"request_head"> => ({
      type: "request_head",
      stream: 7,
      tunnel_id: edge.tunnelId("web"),
      method: "GET",
      target,
      headers: [["host", "fake.localhost"]],
      client_addr: "203.0.113.7",
      scheme: "http",
    });
    session.send(head("/delay/300"));
    session.send({ type: "end", stream: 7, count: 0 });
    session.send(head("/intruder"));
    const refused = await session.next("reset", (frame) => frame.stream === 7);
    expect(refused).toMatchObject({ code: "protocol_error", message: "stream 7 is still open on this agent" });
    const response = await session.next("response_head", (frame) => frame.stream === 7);
    expect(response.status).toBe(200);
    const body = await session.next("data", (frame) => frame.stream === 7);
    expect(JSON.parse(new TextDecoder().decode(body.bytes))).toMatchObject({ url: "/delay/300" });
    expect(upstream.seen.some((request) => request.url === "/intruder")).toBe(false);
  });
});

describe("the session", () => {
  it("reconnects with backoff after the edge drops and reopens tunnels on the same host name", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    const [web] = await agent.ready;
    const before = web.publicUrl;
    const sessions = edge.sessions.length;
    edge.dropAll();
    await expect.poll(() => agent.session.status.state, SETTLES).toBe("reconnecting");
    await expect.poll(() => [agent.session.status.state, web.state], SETTLES).toEqual(["online", "online"]);
    expect(edge.sessions.length).toBe(sessions + 1);
    expect(agent.session.status.reconnects).toBe(1);
    expect(web.publicUrl).toBe(before);
    const answer = await edge.sessions.at(-1)!.relay(web.id, { target: "/again" });
    expect(answer.status).toBe(200);
  });

  it("gives up when the edge refuses the API key, with the edge's message", async () => {
    edge.refuse = { status: 401, body: { error_code: "ERR_SVC_203", status_code: 401, msg: "The API key is not valid." } };
    const agent = await agentWith({ api_key: "tgk_wrong" });
    await expect(agent.ready).rejects.toThrow("the edge refused the agent: The API key is not valid. (ERR_SVC_203)");
    expect(agent.session.status.state).toBe("refused");
  });

  it("sends hello with the agent version and metadata", async () => {
    const agent = await agentWith({ metadata: "laptop-1" });
    await agent.ready;
    expect(edge.sessions.at(-1)!.hello).toMatchObject({ agent_version: agent.version, metadata: "laptop-1" });
  });
});

async function agentReady(agent: Agent, names: string[]): Promise<void> {
  await agent.ready;
  for (const name of names) await expect.poll(() => agent.tunnels.get(name)?.state, SETTLES).toBe("online");
}

describe("flow control of request bodies (the agent holds the edge to its window)", () => {
  it("resets a stream whose edge sends request body past the agent's window, and the local service gets no more of it", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const session = await edge.session(edge.sessions.length - 1);
    const stream = 41;
    const chunk = new Uint8Array(64 * 1024);
    const frames: Frame[] = [
      {
        type: "request_head",
        stream,
        tunnel_id: edge.tunnelId("web"),
        method: "POST",
        target: "/flooded",
        headers: [["host", "fake.localhost"]],
        client_addr: "203.0.113.7",
        scheme: "http",
      },
      // one frame more than the window allows, all in one message, so no acknowledgement can come in between
      ...Array.from({ length: INITIAL_STREAM_WINDOW / chunk.byteLength + 1 }, (_, seq): Frame => ({ type: "data", stream, seq, bytes: chunk })),
    ];
    session.ws.send(message(frames));
    const reset = await session.next("reset", (frame) => frame.stream === stream);
    expect(reset).toEqual({
      type: "reset",
      stream,
      code: "protocol_error",
      message: `the edge broke the protocol: data frame 8 goes past the flow-control window of ${INITIAL_STREAM_WINDOW} bytes`,
    });
    await expect.poll(() => agent.tunnels.get("web")!.metrics.snapshot().conns.gauge, SETTLES).toBe(0);
  });

  it("does not hold a replay to the window: a replayed body larger than the window reaches the local service whole", async () => {
    const agent = await agentWith({ tunnels: { web: { addr: upstream.port } } });
    await agentReady(agent, ["web"]);
    const body = patternBytes(2 * INITIAL_STREAM_WINDOW + 123);
    const answer = await sendToLocal(agent.tunnels.get("web")!, { method: "PUT", target: "/big-replay", headers: [], body });
    expect(answer.ok && JSON.parse(Buffer.from(answer.body).toString())).toMatchObject({ bodyLength: body.byteLength, bodySha256: sha256(body) });
  });
});
