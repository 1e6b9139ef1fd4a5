/**
 * The floor of any tunnel relay on this platform, for bench:tunnel: a public request goes from the Worker to
 * one Durable Object holding the agent's WebSocket, and back. Control messages are JSON text; body bytes
 * are binary messages, a 4-byte request id and the bytes. Nothing is checked, limited or acknowledged:
 * no flow control, no policy, no capture, so a relay that does those things cannot be faster than this.
 * A request for the host `origin.floor` is fetched from the local service by the Worker itself instead (an
 * origin route without a gateway), the floor's own baseline.
 */

import { DurableObject } from "cloudflare:workers";

interface Env {
  readonly ORIGIN: string;
  readonly RELAY: DurableObjectNamespace<FloorRelay>;
}

/** The agent's answer: a whole small body, or `stream` (binary messages follow, then `{ id, end: true }`). */
interface Head {
  readonly id: number;
  readonly status: number;
  readonly headers: Array<[string, string]>;
  readonly body?: string;
  readonly stream?: boolean;
  readonly end?: boolean;
}

/** Request bodies are read in pieces of this size, as Tollgate's edge reads them. */
const READ_SIZE = 512 * 1024;

export class FloorRelay extends DurableObject<Env> {
  private readonly pending = new Map<number, (response: Response) => void>();
  private readonly writers = new Map<number, WritableStreamDefaultWriter<Uint8Array>>();
  private nextId = 0;
  private agent: WebSocket | undefined;

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/connect") {
      const [client, server] = Object.values(new WebSocketPair());
      server.binaryType = "arraybuffer";
      this.ctx.acceptWebSocket(server);
      this.agent = server;
      return new Response(null, { status: 101, webSocket: client });
    }
    const agent = this.agent ?? this.ctx.getWebSockets()[0];
    if (!agent) return new Response("no agent", { status: 502 });
    const id = this.nextId++;
    const answer = new Promise<Response>((resolve) => this.pending.set(id, resolve));
    agent.send(JSON.stringify({ id, method: request.method, target: url.searchParams.get("target") ?? "/", body: request.body !== null }));
    if (request.body) void this.sendBody(agent, id, request.body);
    return answer;
  }

  private async sendBody(agent: WebSocket, id: number, body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader({ mode: "byob" });
    for (;;) {
      const buffer = new Uint8Array(4 + READ_SIZE);
      const { done, value } = await reader.read(buffer.subarray(4));
      if (done) break;
      const message = new Uint8Array(value.buffer, 0, 4 + value.byteLength);
      new DataView(message.buffer).setUint32(0, id);
      agent.send(message);
    }
    agent.send(JSON.stringify({ id, end: true }));
  }

  override webSocketMessage(_ws: WebSocket, message: string | ArrayBuffer): void {
    if (typeof message !== "string") {
      const id = new DataView(message).getUint32(0);
      void this.writers.get(id)?.write(new Uint8Array(message, 4));
      return;
    }
    const head = JSON.parse(message) as Head;
    if (head.end) {
      void this.writers.get(head.id)?.close();
      this.writers.delete(head.id);
      return;
    }
    const resolve = this.pending.get(head.id);
    this.pending.delete(head.id);
    if (!head.stream) return resolve?.(new Response(head.body ?? "", { status: head.status, headers: head.headers }));
    const pipe = new IdentityTransformStream();
    this.writers.set(head.id, pipe.writable.getWriter());
    resolve?.(new Response(pipe.readable, { status: head.status, headers: head.headers }));
  }
}

export default {
  fetch(request, env) {
    const url = new URL(request.url);
    const init = { method: request.method, headers: request.headers, body: request.body };
    if (request.headers.get("host") === "origin.floor") return fetch(`${env.ORIGIN}${url.pathname}${url.search}`, init);
    const relay = env.RELAY.get(env.RELAY.idFromName("floor"));
    if (url.pathname === "/connect") return relay.fetch(request);
    return relay.fetch(`https://relay/r?target=${encodeURIComponent(url.pathname + url.search)}`, init);
  },
} satisfies ExportedHandler<Env>;
