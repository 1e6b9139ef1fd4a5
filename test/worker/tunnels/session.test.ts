import { env, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { getOnlineTunnel, listOnlineTunnels } from "../../../src/tunnels/registry-client.ts";
import { INITIAL_STREAM_WINDOW, LARGE_DATA_CHUNK, MAX_DATA_CHUNK, type FrameOf } from "../../../src/relay/index.ts";
import { firstDifference } from "../../shared/first-difference.ts";
import { responseFrames } from "../../shared/frames.ts";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];

async function agentSession(hello: Partial<FrameOf<"hello">> = {}) {
  const session = await connectAgent(undefined, hello);
  agents.push(session.agent);
  return session;
}

afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function answer(agent: FakeAgent, head: FrameOf<"request_head">, status: number, body: string, headers: Array<[string, string]> = []) {
  for (const frame of responseFrames(head.stream, status, body, [["content-type", "text/plain"], ...headers])) agent.send(frame);
}

/** Ceiling for conditions that become true a few event-loop turns or object calls later. */
const SETTLES = { timeout: 5_000, interval: 50 };

describe("agent endpoint", () => {
  it("refuses a connection without an API key with the management API's 401 envelope", async () => {
    const response = await SELF.fetch("http://127.0.0.1/__tollgate/agent", { headers: { upgrade: "websocket" } });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_200", status_code: 401 });
  });

  it("answers 426 to a plain HTTP request", async () => {
    const response = await SELF.fetch("http://127.0.0.1/__tollgate/agent");
    expect(response.status).toBe(426);
    expect(((await response.json()) as { msg: string }).msg).toContain("WebSocket");
  });

  it("refuses an agent speaking another protocol version", async () => {
    const response = await SELF.fetch("http://127.0.0.1/__tollgate/agent", {
      headers: { upgrade: "websocket", authorization: "Bearer tgk_dev_local_only_0000000000000000", "tollgate-protocol": "9" },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { msg: string }).msg).toContain("protocol version 9");
  });

  it("welcomes an agent with a ts_ session id and the heartbeat interval", async () => {
    const { welcome } = await agentSession();
    expect(welcome.session_id).toMatch(/^ts_[0-9A-Za-z]{27}$/);
    expect(welcome.region).toBe("local");
    expect(welcome.heartbeat_ms).toBeGreaterThan(0);
    expect(welcome.max_data_chunk).toBe(LARGE_DATA_CHUNK);
  });
});

describe("starting tunnels", () => {
  it("assigns tn_ and ep_ ids and a public host under TUNNEL_DOMAIN, listed in the registry with every field", async () => {
    const { agent, welcome } = await agentSession();
    const tunnel = await agent.startOk({ name: "web", metadata: "team=a", forwards_to: "http://localhost:3000" });
    expect(tunnel.id).toMatch(/^tn_/);
    expect(tunnel.public_url).toMatch(/^http:\/\/[a-z0-9]{12}\.localhost:8787$/);

    const record = await getOnlineTunnel(env, "acct_dev", tunnel.id);
    expect(record).toEqual({
      id: tunnel.id,
      public_url: tunnel.public_url,
      started_at: tunnel.started_at,
      metadata: "team=a",
      proto: "http",
      region: "local",
      tunnel_session: { id: welcome.session_id },
      endpoint: { id: expect.stringMatching(/^ep_/) },
      forwards_to: "http://localhost:3000",
    });
    expect((await listOnlineTunnels(env, "acct_dev")).map((t) => t.id)).toContain(tunnel.id);
    expect(await listOnlineTunnels(env, "acct_other")).toEqual([]);
  });

  it("registers a labeled tunnel with labels and a backend, and no public URL", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk({ proto: undefined, labels: { edge: "edghts_x", app: "api" } });
    expect(tunnel.public_url).toBeUndefined();
    const record = await getOnlineTunnel(env, "acct_dev", tunnel.id);
    expect(record?.labels).toEqual({ edge: "edghts_x", app: "api" });
    expect(record?.backends?.[0].id).toMatch(/^bkdtg_[0-9A-Za-z]{27}$/);
    expect(record?.public_url).toBeUndefined();
    expect(record?.endpoint).toBeUndefined();
  });

  it("refuses tcp and tls tunnels: Workers ingress cannot serve them", async () => {
    const { agent } = await agentSession();
    for (const proto of ["tcp", "tls"]) {
      const answer = await agent.start({ proto });
      expect(answer).toMatchObject({ type: "tunnel_failed", code: "unsupported_proto" });
      expect((answer as FrameOf<"tunnel_failed">).message).toContain(`${proto} tunnels are not supported: Cloudflare Workers ingress accepts only HTTP(S)`);
    }
  });

  it("refuses an invalid traffic policy with the validation message naming the path", async () => {
    const { agent } = await agentSession();
    const answer = await agent.start({
      traffic_policy: {
        inbound: [
          { actions: [{ type: "rate-limit", config: { name: "x", algorithm: "sliding_window", capacity: 1, rate: "7s", bucket_key: ["conn.client_ip"] } }] },
        ],
      },
    });
    expect(answer.type).toBe("tunnel_failed");
    expect((answer as FrameOf<"tunnel_failed">).message).toMatch(/^traffic_policy\.inbound\[0\]\.actions\[0\]\.config\.rate: /);
  });

  it("gives a wanted subdomain, and refuses it to a second online tunnel", async () => {
    const { agent } = await agentSession();
    const subdomain = `sub${Math.random().toString(36).slice(2, 10)}`;
    const first = await agent.startOk({ subdomain });
    expect(first.public_url).toBe(`http://${subdomain}.localhost:8787`);
    const { agent: other } = await agentSession();
    const answer = await other.start({ subdomain });
    expect(answer).toMatchObject({ type: "tunnel_failed", code: "subdomain_in_use" });
    agent.close();
    await expect.poll(async () => (await other.start({ subdomain })).type, SETTLES).toBe("tunnel_started");
  });
});

describe("relaying public requests", () => {
  it("preserves method, path, query, headers and status, and passes the client address", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!, "/a/b?x=1&y=%20", {
      method: "PUT",
      headers: { "x-custom": "yes", "cf-connecting-ip": "203.0.113.9", "content-type": "text/plain" },
      body: "payload",
    });
    const head = await agent.next("request_head");
    expect(head).toMatchObject({ tunnel_id: tunnel.id, method: "PUT", target: "/a/b?x=1&y=%20", client_addr: "203.0.113.9", scheme: "http" });
    expect(head.headers).toContainEqual(["x-custom", "yes"]);
    expect(head.headers).toContainEqual(["host", new URL(tunnel.public_url!).host]);
    const data = await agent.next("data");
    expect(new TextDecoder().decode(data.bytes)).toBe("payload");
    await agent.next("end");
    await answer(agent, head, 201, "created", [
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
    ]);
    const response = await pending;
    expect(response.status).toBe(201);
    expect(await response.text()).toBe("created");
    expect(response.headers.getAll("set-cookie")).toEqual(["a=1", "b=2"]);
  });

  it("delivers every body whole over many back-to-back exchanges (frames are put back in order)", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    for (let i = 0; i < 20; i++) {
      const pending = publicFetch(tunnel.public_url!, `/n/${i}`);
      const head = await agent.next("request_head");
      agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [] });
      agent.send({ type: "data", stream: head.stream, seq: 0, bytes: new TextEncoder().encode(`part-${i}-`) });
      agent.send({ type: "data", stream: head.stream, seq: 1, bytes: new TextEncoder().encode("tail") });
      agent.send({ type: "end", stream: head.stream, count: 2 });
      expect(await (await pending).text()).toBe(`part-${i}-tail`);
    }
  });

  it("answers a response that came whole in one message with its body and length, out of order or not", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!, "/small");
    const head = await agent.next("request_head");
    const bytes = (text: string) => new TextEncoder().encode(text);
    agent.sendBatch([
      { type: "data", stream: head.stream, seq: 1, bytes: bytes("world") },
      { type: "response_head", stream: head.stream, status: 200, headers: [["content-type", "text/plain"]] },
      { type: "end", stream: head.stream, count: 2 },
      { type: "data", stream: head.stream, seq: 0, bytes: bytes("hello ") },
    ]);
    const response = await pending;
    expect(response.headers.get("content-length")).toBe("11");
    expect(await response.text()).toBe("hello world");
  });

  // A larger one resets its stream only: relay-bounds.test.ts › "a data frame past the LARGE_DATA_CHUNK…".
  it("takes data frames up to the LARGE_DATA_CHUNK its welcome announced", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!, "/large");
    const head = await agent.next("request_head");
    const body = new Uint8Array(LARGE_DATA_CHUNK).map((_, i) => i % 251);
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [["content-type", "application/octet-stream"]] });
    agent.send({ type: "data", stream: head.stream, seq: 0, bytes: body });
    agent.send({ type: "end", stream: head.stream, count: 1 });
    const response = await pending;
    expect(firstDifference(new Uint8Array(await response.arrayBuffer()), body)).toBe(-1);
  });

  it("answers 404 with ERR_SVC_3200 for a host no tunnel serves", async () => {
    const response = await SELF.fetch("http://nobodyhere.localhost:8787/");
    expect(response.status).toBe(404);
    const body = (await response.json()) as { error_code: string; msg: string };
    expect(body.error_code).toBe("ERR_SVC_3200");
    expect(body.msg).toContain("nobodyhere.localhost:8787");
  });

  it("answers 502 with ERR_SVC_8012 when the agent cannot reach its local service", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!);
    const head = await agent.next("request_head");
    agent.send({ type: "reset", stream: head.stream, code: "upstream_unreachable", message: "connect ECONNREFUSED 127.0.0.1:3000" });
    const response = await pending;
    expect(response.status).toBe(502);
    const body = (await response.json()) as { error_code: string; msg: string };
    expect(body.error_code).toBe("ERR_SVC_8012");
    expect(body.msg).toContain("ECONNREFUSED");
  });

  it("streams a request body within the window and continues as the agent acknowledges", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const size = INITIAL_STREAM_WINDOW * 3;
    const pending = publicFetch(tunnel.public_url!, "/upload", { method: "POST", body: new Uint8Array(size).fill(7) });
    const head = await agent.next("request_head");
    let received = 0;
    let acknowledged = 0;
    for (;;) {
      const frame = await agent.nextOf(["data", "end"], (f) => f.stream === head.stream);
      if (frame.type === "end") break;
      received += frame.bytes.byteLength;
      expect(frame.bytes.byteLength).toBeLessThanOrEqual(MAX_DATA_CHUNK); // its hello did not say it takes more
      expect(received - acknowledged).toBeLessThanOrEqual(INITIAL_STREAM_WINDOW);
      agent.send({ type: "window", stream: head.stream, increment: frame.bytes.byteLength });
      acknowledged += frame.bytes.byteLength;
    }
    expect(received).toBe(size);
    await answer(agent, head, 200, "ok");
    expect(await (await pending).text()).toBe("ok");
  });

  it("sends a request body in data frames as large as the agent's hello allows, within the window, the body whole", async () => {
    const { agent } = await agentSession({ max_data_chunk: LARGE_DATA_CHUNK });
    const tunnel = await agent.startOk();
    const sent = new Uint8Array(4 * LARGE_DATA_CHUNK).map((_, i) => (i * 7) % 251);
    const pending = publicFetch(tunnel.public_url!, "/upload", { method: "POST", body: sent });
    const head = await agent.next("request_head");
    const received: Uint8Array[] = [];
    let unacknowledged = 0;
    for (;;) {
      const frame = await agent.nextOf(["data", "end"], (f) => f.stream === head.stream);
      if (frame.type === "end") break;
      received.push(frame.bytes);
      unacknowledged += frame.bytes.byteLength;
      expect(frame.bytes.byteLength).toBeLessThanOrEqual(LARGE_DATA_CHUNK);
      expect(unacknowledged).toBeLessThanOrEqual(INITIAL_STREAM_WINDOW);
      // acknowledged in halves of the window, as a real agent batches them: the edge sends what fits meanwhile
      if (unacknowledged >= INITIAL_STREAM_WINDOW / 2) {
        agent.send({ type: "window", stream: head.stream, increment: unacknowledged });
        unacknowledged = 0;
      }
    }
    expect(firstDifference(concatBytes(received), sent)).toBe(-1);
    expect(Math.max(...received.map((bytes) => bytes.byteLength))).toBeGreaterThan(MAX_DATA_CHUNK);
    await answer(agent, head, 200, "ok");
    expect(await (await pending).text()).toBe("ok");
  });

  it("lets the agent answer before the request body has all gone out (the body keeps flowing)", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const size = INITIAL_STREAM_WINDOW * 2;
    const pending = publicFetch(tunnel.public_url!, "/early", { method: "POST", body: new Uint8Array(size).fill(1) });
    const head = await agent.next("request_head");
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [] });
    let received = 0;
    for (;;) {
      const frame = await agent.nextOf(["data", "end"], (f) => f.stream === head.stream);
      if (frame.type === "end") break;
      received += frame.bytes.byteLength;
      agent.send({ type: "window", stream: head.stream, increment: frame.bytes.byteLength });
    }
    expect(received).toBe(size);
    agent.send({ type: "data", stream: head.stream, seq: 0, bytes: new TextEncoder().encode(`got ${received}`) });
    agent.send({ type: "end", stream: head.stream, count: 1 });
    expect(await (await pending).text()).toBe(`got ${size}`);
  });

  it("resets a stream whose agent sends past its flow-control window", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!, "/flood");
    const head = await agent.next("request_head");
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [] });
    const chunk = new Uint8Array(64 * 1024);
    // all in one message, so no acknowledgement can come in between
    agent.sendBatch(
      Array.from({ length: INITIAL_STREAM_WINDOW / chunk.byteLength + 1 }, (_, seq) => ({ type: "data" as const, stream: head.stream, seq, bytes: chunk })),
    );
    const reset = await agent.next("reset", (frame) => frame.stream === head.stream);
    expect(reset).toMatchObject({
      code: "protocol_error",
      message: `the agent broke the protocol: data frame 8 goes past the flow-control window of ${INITIAL_STREAM_WINDOW} bytes`,
    });
    // The public client never gets the data past the window: its body errors, or (seen on a loaded machine,
    // when the abort crosses the isolate boundary before the body does) ends short.
    const received = await (await pending).arrayBuffer().then(
      (body) => body.byteLength,
      () => "errored",
    );
    expect(typeof received === "string" || received <= INITIAL_STREAM_WINDOW).toBe(true);
  });

  it("applies the tunnel's traffic policy: a rate limit answers 429 with retry-after", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk({
      traffic_policy: {
        inbound: [
          { actions: [{ type: "rate-limit", config: { name: "t", algorithm: "sliding_window", capacity: 1, rate: "60s", bucket_key: ["conn.client_ip"] } }] },
        ],
      },
    });
    const first = publicFetch(tunnel.public_url!, "/", { headers: { "cf-connecting-ip": "198.51.100.4" } });
    await answer(agent, await agent.next("request_head"), 200, "one");
    const firstResponse = await first;
    expect(firstResponse.status, await firstResponse.clone().text()).toBe(200);
    const second = await publicFetch(tunnel.public_url!, "/", { headers: { "cf-connecting-ip": "198.51.100.4" } });
    expect(second.status).toBe(429);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("relaying WebSockets", () => {
  it("upgrades when the agent's local socket opens, then relays messages and closes both ways", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!, "/socket?room=1", { headers: { upgrade: "websocket", "sec-websocket-protocol": "chat" } });
    const head = await agent.next("request_head");
    expect(head).toMatchObject({ method: "GET", target: "/socket?room=1", upgrade: "websocket" });
    expect(head.headers).toContainEqual(["sec-websocket-protocol", "chat"]);
    agent.send({ type: "response_head", stream: head.stream, status: 101, headers: [["sec-websocket-protocol", "chat"]] });
    const response = await pending;
    expect(response.status).toBe(101);
    expect(response.headers.get("sec-websocket-protocol")).toBe("chat");
    const ws = response.webSocket!;
    ws.accept();
    const received: string[] = [];
    ws.addEventListener("message", (event) => received.push(String(event.data)));
    let closed: { code: number; reason: string } | undefined;
    ws.addEventListener("close", (event) => (closed = { code: event.code, reason: event.reason }));

    ws.send("hello from the public client");
    const fromClient = await agent.next("ws_message", (frame) => frame.stream === head.stream);
    expect(fromClient.binary).toBe(false);
    expect(new TextDecoder().decode(fromClient.bytes)).toBe("hello from the public client");

    agent.send({ type: "ws_message", stream: head.stream, binary: false, bytes: new TextEncoder().encode("hello from the local service") });
    await expect.poll(() => received.length, SETTLES).toBe(1);
    expect(received).toEqual(["hello from the local service"]);

    agent.send({ type: "ws_close", stream: head.stream, code: 4000, reason: "bye" });
    await expect.poll(() => closed, SETTLES).toBeDefined();
    expect(closed).toEqual({ code: 4000, reason: "bye" });
  });

  it("passes the local service's refusal of an upgrade on as its response", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!, "/nope", { headers: { upgrade: "websocket" } });
    const head = await agent.next("request_head");
    await answer(agent, head, 404, "no socket here");
    const response = await pending;
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("no socket here");
  });

  it("tells the agent when the public client closes", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    const pending = publicFetch(tunnel.public_url!, "/", { headers: { upgrade: "websocket" } });
    const head = await agent.next("request_head");
    agent.send({ type: "response_head", stream: head.stream, status: 101, headers: [] });
    const ws = (await pending).webSocket!;
    ws.accept();
    ws.close(1000, "done");
    expect(await agent.next("ws_close", (frame) => frame.stream === head.stream)).toMatchObject({ code: 1000, reason: "done" });
  });
});

describe("going offline", () => {
  it("a stopped tunnel leaves the registry and its host answers 404", async () => {
    const { agent } = await agentSession();
    const tunnel = await agent.startOk();
    agent.send({ type: "stop_tunnel", request_id: 99, tunnel_id: tunnel.id });
    expect(await agent.next("tunnel_stopped")).toMatchObject({ request_id: 99, tunnel_id: tunnel.id });
    expect(await getOnlineTunnel(env, "acct_dev", tunnel.id)).toBeUndefined();
    expect((await publicFetch(tunnel.public_url!)).status).toBe(404);
  });

  it("closing the session takes all its tunnels offline and fails requests in flight with 502", async () => {
    const { agent } = await agentSession();
    const one = await agent.startOk({ name: "one" });
    const two = await agent.startOk({ name: "two" });
    const pending = publicFetch(one.public_url!);
    await agent.next("request_head");
    agent.close();
    const response = await pending;
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error_code: string }).error_code).toBe("ERR_SVC_3004");
    await expect
      .poll(async () => [await getOnlineTunnel(env, "acct_dev", one.id), await getOnlineTunnel(env, "acct_dev", two.id)], SETTLES)
      .toEqual([undefined, undefined]);
    expect((await publicFetch(two.public_url!)).status).toBe(404);
  });

  it("a protocol violation closes the session with 1002 and the reason", async () => {
    const { agent } = await agentSession();
    agent.ws.send(new Uint8Array([9, 1, 0, 0, 0, 0, 0, 0, 0, 0]));
    await expect.poll(() => agent.closed, SETTLES).toBeDefined();
    expect(agent.closed).toMatchObject({ code: 1002 });
    expect(agent.closed?.reason).toContain("protocol version 9");
  });

  it("answers heartbeats", async () => {
    const { agent } = await agentSession();
    agent.ping();
    await expect.poll(() => agent.texts, SETTLES).toContain("tollgate:pong");
  });
});

function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    whole.set(part, offset);
    offset += part.byteLength;
  }
  return whole;
}
