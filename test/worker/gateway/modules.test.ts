import { env } from "cloudflare:test";
import { beforeEach, describe, expect, inject, it } from "vitest";
import type { Env } from "../../../src/env.ts";
import { MODULES_TTL_MS, type RouteModules } from "../../../src/gateway/modules/route-modules.ts";
import type { UpstreamHandlers } from "../../../src/gateway/upstream.ts";
import { accountStore } from "../../../src/management/account-store.ts";
import { edgeOwnerAccount } from "../../../src/management/edge-routes.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { newIsolate, send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;
const tcpEcho = `tcp://127.0.0.1:${inject("tcpEchoPort")}`;

/** An isolate whose memories and breaker objects run on a clock the test moves. */
function isolateOnClock() {
  const clock = { now: 1_700_000_000_000 };
  return { clock, isolate: newIsolate(() => clock.now) };
}

function withModules(modules: RouteModules): UpstreamHandlers {
  return { ...upstreamHandlers, routeModules: async () => modules };
}

const breaker = (overrides: Partial<NonNullable<RouteModules["circuit_breaker"]>> = {}): RouteModules => ({
  circuit_breaker: {
    enabled: true,
    tripped_duration: 1,
    rolling_window: 10,
    num_buckets: 10,
    volume_threshold: 4,
    error_threshold_percentage: 0.5,
    ...overrides,
  },
});

let upstreams = 0;
async function flakyUpstream() {
  const name = `u${upstreams++}${Math.random().toString(36).slice(2, 7)}`;
  const control = async (command: "fail" | "recover" | "hits") =>
    ((await (await fetch(`${upstream}/control/${name}/${command}`)).json()) as { hits: number }).hits;
  return { path: `/flaky/${name}`, control };
}

async function statusOf(response: Response): Promise<number> {
  await response.body?.cancel();
  return response.status;
}

describe("circuit breaker module", () => {
  let routes = singleEdge(`      - { id: r, match: /, upstream: ${upstream} }\n`);
  // A fresh edge per test: circuits live in Durable Objects that outlast a test.
  beforeEach(() => {
    routes = singleEdge(`      - { id: r, match: /, upstream: ${upstream} }\n`);
  });

  it("trips at the threshold and then answers 503 without calling the upstream", async () => {
    const { path, control } = await flakyUpstream();
    const { isolate } = isolateOnClock();
    await control("fail");
    const handlers = withModules(breaker());
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate)));
    expect(first).toEqual([500, 500, 500, 500]);
    expect(await control("hits")).toBe(4);

    for (let i = 0; i < 5; i++) {
      const rejected = await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate);
      expect(rejected.status).toBe(503);
      expect(rejected.headers.get("x-tollgate-circuit")).toBe("open");
      expect(Number(rejected.headers.get("retry-after"))).toBe(1);
      expect(await rejected.json()).toMatchObject({ error_code: "ERR_SVC_303", status_code: 503 });
    }
    expect(await control("hits")).toBe(4);
  });

  it("an isolate that has not seen the circuit learns from its object that it is open", async () => {
    const { path, control } = await flakyUpstream();
    const { clock, isolate } = isolateOnClock();
    await control("fail");
    const handlers = withModules(breaker());
    for (let i = 0; i < 4; i++) await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate));

    const other = newIsolate(() => clock.now);
    expect(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, other))).toBe(503);
    expect(await control("hits")).toBe(4);
  });

  it("after tripped_duration exactly one probe passes; its success closes the circuit", async () => {
    const { path, control } = await flakyUpstream();
    const { clock, isolate } = isolateOnClock();
    await control("fail");
    const handlers = withModules(breaker());
    for (let i = 0; i < 4; i++) await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate));
    await control("recover");

    clock.now += 999;
    expect(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate))).toBe(503);
    expect(await control("hits")).toBe(4);

    clock.now += 1;
    const concurrent = await Promise.all(
      Array.from({ length: 6 }, () => send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate).then(statusOf)),
    );
    expect(concurrent.filter((status) => status === 200)).toHaveLength(1);
    expect(concurrent.filter((status) => status === 503)).toHaveLength(5);
    expect(await control("hits")).toBe(5);

    expect(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate))).toBe(200);
    expect(await control("hits")).toBe(6);
  });

  it("a failed probe opens the circuit again", async () => {
    const { path, control } = await flakyUpstream();
    const { clock, isolate } = isolateOnClock();
    await control("fail");
    const handlers = withModules(breaker());
    for (let i = 0; i < 4; i++) await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate));
    clock.now += 1_000;
    expect(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate))).toBe(500);
    expect(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate))).toBe(503);
    expect(await control("hits")).toBe(5);
  });

  it("below the error percentage it stays closed", async () => {
    const { path, control } = await flakyUpstream();
    const { isolate } = isolateOnClock();
    const handlers = withModules(breaker({ error_threshold_percentage: 0.75 }));
    const statuses = [];
    for (const failing of [true, false, true, false, true, false]) {
      await control(failing ? "fail" : "recover");
      statuses.push(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate)));
    }
    expect(statuses).toEqual([500, 200, 500, 200, 500, 200]);
  });

  it("enabled: false has no effect", async () => {
    const { path, control } = await flakyUpstream();
    const { isolate } = isolateOnClock();
    await control("fail");
    const handlers = withModules(breaker({ enabled: false }));
    for (let i = 0; i < 8; i++) expect(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, handlers, isolate))).toBe(500);
    expect(await control("hits")).toBe(8);
  });
});

function received(socket: WebSocket, bytes: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let total = 0;
    const onMessage = (event: MessageEvent) => {
      const chunk = typeof event.data === "string" ? new TextEncoder().encode(event.data) : new Uint8Array(event.data as ArrayBuffer);
      chunks.push(chunk);
      total += chunk.byteLength;
      if (total >= bytes) {
        socket.removeEventListener("message", onMessage);
        const all = new Uint8Array(total);
        let offset = 0;
        for (const part of chunks) {
          all.set(part, offset);
          offset += part.byteLength;
        }
        resolve(all);
      }
    };
    socket.addEventListener("message", onMessage);
    socket.addEventListener("close", () => reject(new Error(`closed after ${total} of ${bytes} bytes`)));
  });
}

describe("websocket TCP converter module", () => {
  const routes = singleEdge(`      - { id: tcp, match: /, upstream: "${tcpEcho}" }\n`);
  const converter = withModules({ websocket_tcp_converter: { enabled: true } });

  async function open(): Promise<WebSocket> {
    const response = await send(routes, new Request("http://gw.test/socket", { headers: { upgrade: "websocket" } }), {}, converter);
    expect(response.status).toBe(101);
    const socket = response.webSocket!;
    socket.binaryType = "arraybuffer";
    socket.accept();
    return socket;
  }

  it("bytes round-trip through the TCP upstream as binary messages", async () => {
    const socket = await open();
    const reply = received(socket, 5);
    socket.send(new TextEncoder().encode("hello"));
    expect(new TextDecoder().decode(await reply)).toBe("hello");
    socket.close(1000, "done");
  });

  it("a 4 MiB payload arrives whole and in order", async () => {
    const socket = await open();
    const payload = new Uint8Array(4 * 1024 * 1024);
    for (let i = 0; i < payload.length; i++) payload[i] = i % 251;
    const reply = received(socket, payload.length);
    for (let offset = 0; offset < payload.length; offset += 256 * 1024) socket.send(payload.subarray(offset, offset + 256 * 1024));
    const echoed = await reply;
    expect(echoed.length).toBe(payload.length);
    expect(echoed.every((byte, i) => byte === payload[i])).toBe(true);
    socket.close(1000, "done");
  });

  it("the TCP side closing closes the WebSocket", async () => {
    const socket = await open();
    const closed = new Promise<CloseEvent>((resolve) => socket.addEventListener("close", resolve));
    socket.send(new TextEncoder().encode("bye"));
    const event = await closed;
    expect(event.code).toBe(1000);
  });

  it("the WebSocket side closing closes the TCP connection", async () => {
    const openConnections = async () => ((await (await fetch(`${upstream}/tcp-connections`)).json()) as { open: number }).open;
    const socket = await open();
    const reply = received(socket, 2);
    socket.send(new TextEncoder().encode("hi"));
    await reply;
    const before = await openConnections();
    expect(before).toBeGreaterThanOrEqual(1);
    socket.close(1000, "client done");
    await expect.poll(openConnections, { timeout: 2_000, interval: 50 }).toBe(before - 1);
  });

  it("a request that is not a WebSocket upgrade gets 400 saying so", async () => {
    const response = await send(routes, new Request("http://gw.test/socket"), {}, converter);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { msg: string }).msg).toContain("send a WebSocket upgrade");
  });

  it("without the module, a tcp:// route explains what is missing", async () => {
    const response = await send(routes, new Request("http://gw.test/socket", { headers: { upgrade: "websocket" } }), {}, withModules({}));
    expect(response.status).toBe(502);
    expect(((await response.json()) as { msg: string }).msg).toContain("enable its websocket_tcp_converter module");
  });
});

describe("modules stored through the management API", () => {
  async function storedRoute() {
    const routes = singleEdge(`      - { id: r, match: /, upstream: ${upstream} }\n`);
    const route = routes.match("gw.test", "/")!;
    const store = accountStore(env, edgeOwnerAccount(env as Env));
    const { path, control } = await flakyUpstream();
    await control("fail");
    const request = () => new Request(`http://gw.test${path}`);
    return { routes, route, store, request };
  }

  it("a module stored for a route applies once the isolate's memory of the route is MODULES_TTL_MS old", async () => {
    const { routes, route, store, request } = await storedRoute();
    const { clock, isolate } = isolateOnClock();
    expect(await statusOf(await send(routes, request(), {}, upstreamHandlers, isolate))).toBe(500);
    await store.putRouteModule(route.edgeId, route.id, "circuit_breaker", { ...breaker().circuit_breaker, tripped_duration: 60 });

    clock.now += MODULES_TTL_MS - 1;
    const remembered: number[] = [];
    for (let i = 0; i < 5; i++) remembered.push(await statusOf(await send(routes, request(), {}, upstreamHandlers, isolate)));
    expect(remembered).toEqual([500, 500, 500, 500, 500]);

    clock.now += 1;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push(await statusOf(await send(routes, request(), {}, upstreamHandlers, isolate)));
    expect(statuses).toEqual([500, 500, 500, 500, 503, 503]);
  });

  it("a module's removal stops it once the isolate's memory of the route is MODULES_TTL_MS old", async () => {
    const { routes, route, store, request } = await storedRoute();
    const { clock, isolate } = isolateOnClock();
    await store.putRouteModule(route.edgeId, route.id, "circuit_breaker", { ...breaker().circuit_breaker, tripped_duration: 60 });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push(await statusOf(await send(routes, request(), {}, upstreamHandlers, isolate)));
    expect(statuses).toEqual([500, 500, 500, 500, 503, 503]);

    await store.deleteRouteModule(route.edgeId, route.id, "circuit_breaker");
    clock.now += MODULES_TTL_MS - 1;
    expect(await statusOf(await send(routes, request(), {}, upstreamHandlers, isolate))).toBe(503);
    clock.now += 1;
    expect(await statusOf(await send(routes, request(), {}, upstreamHandlers, isolate))).toBe(500);
  });
});
