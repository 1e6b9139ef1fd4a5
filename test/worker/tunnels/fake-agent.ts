/** An agent speaking the tunnel protocol from inside workerd, for testing the edge without Node. */

import { SELF } from "cloudflare:test";
import { message } from "../../shared/frames.ts";
import { DEV_KEY } from "../management/keys.ts";
import { AGENT_SESSION_PATH, decodeFrames, encodeFrame, HEARTBEAT_PING, LARGE_DATA_CHUNK, type Frame, type FrameOf } from "../../../src/relay/index.ts";

export class FakeAgent {
  private readonly frames: Frame[] = [];
  private waiters: Array<() => void> = [];
  closed: { code: number; reason: string } | undefined;
  readonly texts: string[] = [];

  constructor(readonly ws: WebSocket) {
    ws.binaryType = "arraybuffer";
    ws.addEventListener("message", (event) => {
      if (typeof event.data === "string") this.texts.push(event.data);
      else {
        const decoded = decodeFrames(event.data as ArrayBuffer, LARGE_DATA_CHUNK);
        if (!decoded.ok) throw new Error(decoded.error);
        this.frames.push(...decoded.frames);
      }
      this.wake();
    });
    ws.addEventListener("close", (event) => {
      this.closed = { code: event.code, reason: event.reason };
      this.wake();
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  send(frame: Frame): void {
    this.ws.send(encodeFrame(frame));
  }

  /** Several frames in one WebSocket message, as the agent batches them. */
  sendBatch(frames: Frame[]): void {
    this.ws.send(message(frames));
  }

  ping(): void {
    this.ws.send(HEARTBEAT_PING);
  }

  /** The next frame of `type` (earlier frames of other types stay queued). */
  next<T extends Frame["type"]>(type: T, match: (frame: FrameOf<T>) => boolean = () => true, timeoutMs = 5000): Promise<FrameOf<T>> {
    return this.nextOf([type], match, timeoutMs);
  }

  /** The next frame of any of `types` that matches. */
  async nextOf<T extends Frame["type"]>(types: readonly T[], match: (frame: FrameOf<T>) => boolean = () => true, timeoutMs = 5000): Promise<FrameOf<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.frames.findIndex((frame) => (types as readonly string[]).includes(frame.type) && match(frame as FrameOf<T>));
      if (index >= 0) return this.frames.splice(index, 1)[0] as FrameOf<T>;
      if (this.closed) throw new Error(`connection closed (${this.closed.code} ${this.closed.reason}) while waiting for ${types.join("/")}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${types.join("/")} frame within ${timeoutMs} ms; queued: ${this.frames.map((f) => f.type).join(", ")}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private requestIds = 1;

  /** Starts a tunnel and answers tunnel_started or tunnel_failed. */
  async start(fields: Partial<FrameOf<"start_tunnel">> = {}): Promise<FrameOf<"tunnel_started"> | FrameOf<"tunnel_failed">> {
    const requestId = this.requestIds++;
    this.send({ type: "start_tunnel", request_id: requestId, name: "web", proto: "http", forwards_to: "http://localhost:3000", ...fields });
    return this.nextOf(["tunnel_started", "tunnel_failed"], (frame) => frame.request_id === requestId);
  }

  async startOk(fields: Partial<FrameOf<"start_tunnel">> = {}): Promise<FrameOf<"tunnel_started">["tunnel"]> {
    const answer = await this.start(fields);
    if (answer.type !== "tunnel_started") throw new Error(`tunnel_failed: ${answer.code}: ${answer.message}`);
    return answer.tunnel;
  }

  close(): void {
    this.ws.close(1000, "bye");
  }
}

/** Connects and says hello; `hello` adds to it (e.g. `max_data_chunk`; without it the agent is taken for an older one). */
export async function connectAgent(key: string = DEV_KEY, hello: Partial<FrameOf<"hello">> = {}): Promise<{ agent: FakeAgent; welcome: FrameOf<"welcome"> }> {
  const response = await SELF.fetch(`http://127.0.0.1:8787${AGENT_SESSION_PATH}`, {
    headers: { upgrade: "websocket", authorization: `Bearer ${key}` },
  });
  if (response.status !== 101 || !response.webSocket) throw new Error(`agent endpoint answered ${response.status}: ${await response.text()}`);
  response.webSocket.accept();
  const agent = new FakeAgent(response.webSocket);
  agent.send({ type: "hello", agent_version: "test", ...hello });
  return { agent, welcome: await agent.next("welcome") };
}

/** A public request to a tunnel's public_url (the Host comes from the URL). */
export function publicFetch(publicUrl: string, path = "/", init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(new URL(path, publicUrl).toString(), init);
}

/**
 * Tunnels whose agents keep their sessions alive with a ping a second: a test may outlast three heartbeat
 * intervals on a busy machine. `closeAll` (an afterEach) stops the pings and closes the agents.
 */
export function keptAliveTunnels() {
  const agents: FakeAgent[] = [];
  const heartbeats: Array<ReturnType<typeof setInterval>> = [];
  return {
    async start() {
      const { agent } = await connectAgent();
      agents.push(agent);
      heartbeats.push(setInterval(() => agent.ping(), 1000));
      return { agent, tunnel: await agent.startOk() };
    },
    closeAll() {
      for (const timer of heartbeats.splice(0)) clearInterval(timer);
      for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
    },
  };
}
