/** An edge speaking the tunnel protocol from Node (ws), so the agent can be tested without workerd. */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import {
  AGENT_BODY_PATH,
  AGENT_SESSION_PATH,
  decodeFrames,
  encodeFrame,
  HEARTBEAT_PING,
  HEARTBEAT_PONG,
  MAX_DATA_CHUNK,
  type Frame,
  type FrameOf,
} from "../../../src/relay/index.ts";
import { bodyFrames } from "../../shared/frames.ts";

export interface RelayedResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
  reset?: { code: string; message: string };
  /** The body came through a body channel (the head said so, and no data frames followed). */
  viaChannel?: boolean;
}

/** A body channel's POST as the fake edge received it. */
export interface ChannelPost {
  readonly url: URL;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
  /** The POST's body broke off before its end. */
  readonly aborted: boolean;
}

export class FakeSession {
  private readonly frames: Frame[] = [];
  private waiters: Array<() => void> = [];
  private streams = 0;
  readonly id: string;
  closed = false;
  hello: FrameOf<"hello"> | undefined;
  /** The largest data frame body the agent sent. */
  largestData = 0;

  constructor(
    readonly ws: WebSocket,
    readonly edge: FakeEdge,
    index: number,
  ) {
    this.id = `ts_fake${index}`;
    ws.on("message", (data: Buffer, isBinary) => {
      if (!isBinary) {
        if (data.toString() === HEARTBEAT_PING) ws.send(HEARTBEAT_PONG);
        return;
      }
      const decoded = decodeFrames(data, this.edge.maxDataChunk);
      if (!decoded.ok) throw new Error(decoded.error);
      for (const frame of decoded.frames) this.onFrame(frame);
    });
    ws.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  private onFrame(frame: Frame): void {
    if (frame.type === "hello") {
      this.hello = frame;
      const large = this.edge.maxDataChunk === undefined ? {} : { max_data_chunk: this.edge.maxDataChunk };
      const channel = this.edge.bodyChannel === undefined ? {} : { body_channel: this.edge.bodyChannel };
      this.send({ type: "welcome", session_id: this.id, region: "test", heartbeat_ms: this.edge.heartbeatMs, ...large, ...channel });
    } else if (frame.type === "start_tunnel") {
      this.send(this.edge.answerStart(frame));
    } else if (frame.type === "stop_tunnel") {
      this.edge.started.delete(frame.tunnel_id);
      this.send({ type: "tunnel_stopped", request_id: frame.request_id, tunnel_id: frame.tunnel_id, reason: "stopped by the agent" });
    }
    if (frame.type === "data") this.largestData = Math.max(this.largestData, frame.bytes.byteLength);
    this.frames.push(frame);
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  send(frame: Frame): void {
    this.ws.send(encodeFrame(frame));
  }

  async next<T extends Frame["type"]>(types: T | readonly T[], match: (frame: FrameOf<T>) => boolean = () => true, timeoutMs = 5000): Promise<FrameOf<T>> {
    const wanted: readonly string[] = Array.isArray(types) ? types : [types];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.frames.findIndex((frame) => wanted.includes(frame.type) && match(frame as FrameOf<T>));
      if (index >= 0) return this.frames.splice(index, 1)[0] as FrameOf<T>;
      if (this.closed) throw new Error(`session closed while waiting for ${wanted.join("/")}`);
      if (Date.now() > deadline) throw new Error(`no ${wanted.join("/")} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /**
   * Relays one request as the edge does and collects the answer. With `ackResponse: false` the response
   * window is never reopened (a client that stops reading).
   */
  async relay(
    tunnelId: string,
    request: {
      method?: string;
      target?: string;
      headers?: Array<[string, string]>;
      body?: Buffer;
      clientAddr?: string;
      /** Bytes per request body data frame (MAX_DATA_CHUNK unless said). */
      frameSize?: number;
    },
    { ackResponse = true, timeoutMs = 10_000 }: { ackResponse?: boolean; timeoutMs?: number } = {},
  ): Promise<RelayedResponse> {
    const stream = ++this.streams;
    this.send({
      type: "request_head",
      stream,
      tunnel_id: tunnelId,
      method: request.method ?? "GET",
      target: request.target ?? "/",
      headers: [["host", "fake.localhost"], ...(request.headers ?? [])],
      client_addr: request.clientAddr ?? "203.0.113.7",
      scheme: "http",
    });
    // The agent's initial window is larger than any test body, so the request body goes out at once.
    const { body, frameSize = MAX_DATA_CHUNK } = request;
    for (const frame of bodyFrames(stream, body ?? new Uint8Array(0), frameSize)) this.send(frame);

    const ofStream = (frame: { stream: number }) => frame.stream === stream;
    const first = await this.next(["response_head", "reset"], ofStream, timeoutMs);
    if (first.type === "reset") return { status: 0, headers: [], body: Buffer.alloc(0), reset: { code: first.code, message: first.message } };
    if (first.body_channel) {
      const post = await this.edge.channelPost(stream, timeoutMs);
      return { status: first.status, headers: first.headers, body: post.body, viaChannel: true };
    }
    const chunks: Buffer[] = [];
    for (;;) {
      const frame = await this.next(["data", "end", "reset"], ofStream, timeoutMs);
      if (frame.type === "end") break;
      if (frame.type === "reset")
        return { status: first.status, headers: first.headers, body: Buffer.concat(chunks), reset: { code: frame.code, message: frame.message } };
      chunks.push(Buffer.from(frame.bytes));
      if (ackResponse) this.send({ type: "window", stream, increment: frame.bytes.byteLength });
    }
    return { status: first.status, headers: first.headers, body: Buffer.concat(chunks) };
  }

  /** Response bytes received so far on a stream nobody acknowledges (for flow-control tests). */
  pendingData(stream: number): number {
    return this.frames
      .filter((frame) => frame.type === "data" && frame.stream === stream)
      .reduce((sum, frame) => sum + (frame as FrameOf<"data">).bytes.byteLength, 0);
  }

  get lastStream(): number {
    return this.streams;
  }
}

export class FakeEdge {
  readonly sessions: FakeSession[] = [];
  readonly started = new Map<string, FrameOf<"start_tunnel">>();
  heartbeatMs = 60_000;
  /** Announced in welcome when set (as the real edge does); unset, the agent is held to MAX_DATA_CHUNK as by an older edge. */
  maxDataChunk: number | undefined;
  /** When set, the upgrade is answered with this instead of 101. */
  refuse: { status: number; body: unknown } | undefined;
  /** Offered in welcome when set (as the real edge does); unset, as an older edge, none. */
  bodyChannel: { object: string; token: string; max_bytes: number } | undefined;
  /** When set, body channel POSTs are answered with this (after their body) instead of 204. */
  refuseBody: { status: number; body: unknown } | undefined;
  /** Body channel POSTs received, in order, once each has ended. */
  readonly channelPosts: ChannelPost[] = [];
  /** Streams (the `stream` parameter) of body channel POSTs that have begun. */
  readonly channelsBegun = new Set<string>();
  private postWaiters: Array<() => void> = [];
  private tunnels = 0;
  private sessionWaiters: Array<(session: FakeSession) => void> = [];

  private constructor(
    private readonly server: Server,
    private readonly wss: WebSocketServer,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeEdge> {
    const server = createServer();
    const wss = new WebSocketServer({ noServer: true });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const edge = new FakeEdge(server, wss, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("request", (request, response) => {
      const url = new URL(request.url ?? "/", edge.url);
      if (request.method !== "POST" || url.pathname !== AGENT_BODY_PATH) {
        response.writeHead(404).end();
        return;
      }
      edge.channelsBegun.add(url.searchParams.get("stream") ?? "");
      const chunks: Buffer[] = [];
      let aborted = false;
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("aborted", () => (aborted = true));
      request.on("close", () => {
        edge.channelPosts.push({ url, headers: request.headers, body: Buffer.concat(chunks), aborted: aborted || !request.complete });
        for (const wake of edge.postWaiters.splice(0)) wake();
        if (response.writableEnded || response.destroyed) return;
        const refusal = edge.refuseBody;
        if (!refusal) return void response.writeHead(204).end();
        response.writeHead(refusal.status, { "content-type": "application/json" }).end(JSON.stringify(refusal.body));
      });
    });
    server.on("upgrade", (request, socket, head) => {
      if (edge.refuse || !request.url?.startsWith(AGENT_SESSION_PATH)) {
        const body = JSON.stringify(edge.refuse?.body ?? { msg: "wrong path" });
        socket.end(
          `HTTP/1.1 ${edge.refuse?.status ?? 404} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        return;
      }
      wss.handleUpgrade(request, socket, head, (ws) => {
        const session = new FakeSession(ws, edge, edge.sessions.length + 1);
        edge.sessions.push(session);
        for (const waiter of edge.sessionWaiters.splice(0)) waiter(session);
      });
    });
    return edge;
  }

  /** What the edge answers to start_tunnel: the real edge's refusals for tcp/tls, a public URL otherwise. */
  answerStart(frame: FrameOf<"start_tunnel">): Frame {
    if (frame.proto === "tcp" || frame.proto === "tls") {
      return { type: "tunnel_failed", request_id: frame.request_id, code: "unsupported_proto", message: `${frame.proto} tunnels are not supported` };
    }
    const id = `tn_fake${++this.tunnels}`;
    this.started.set(id, frame);
    const subdomain = frame.subdomain ?? `sub${this.tunnels}`;
    return {
      type: "tunnel_started",
      request_id: frame.request_id,
      tunnel: { id, name: frame.name, public_url: `http://${subdomain}.localhost:8787`, proto: "http", subdomain, started_at: new Date().toISOString() },
    };
  }

  /** The body channel POST for `stream`, waiting for it to end. */
  channelPost(stream: number, timeoutMs = 10_000): Promise<ChannelPost> {
    const find = () => this.channelPosts.find((each) => each.url.searchParams.get("stream") === String(stream));
    return new Promise((resolve, reject) => {
      // a ceiling on the wait, set once; nothing compares clock readings
      let waiting = true;
      const timer = setTimeout(() => {
        waiting = false;
        reject(new Error(`no body channel POST for stream ${stream} within ${timeoutMs} ms`));
      }, timeoutMs);
      const check = () => {
        if (!waiting) return;
        const post = find();
        if (!post) return void this.postWaiters.push(check);
        clearTimeout(timer);
        resolve(post);
      };
      check();
    });
  }

  /** The newest session, waiting for one if none is connected yet (or none after `after`). */
  async session(after = 0): Promise<FakeSession> {
    const existing = this.sessions[after];
    if (existing) return existing;
    return new Promise((resolve) => this.sessionWaiters.push(resolve));
  }

  tunnelId(name: string): string {
    const found = [...this.started].reverse().find(([, frame]) => frame.name === name);
    if (!found) throw new Error(`no tunnel ${name} started`);
    return found[0];
  }

  /** Drops every connection without a close handshake (the edge process died). */
  dropAll(): void {
    for (const session of this.sessions) session.ws.terminate();
  }

  async close(): Promise<void> {
    this.dropAll();
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
