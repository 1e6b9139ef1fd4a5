/**
 * Relay shapes for bench/tunnel/relay-shapes.ts: what a large body costs on its way through a Worker, a Durable
 * Object and an agent, by how it moves. By the request's host:
 * - `origin.shapes`: the Worker fetches the local service itself (the baseline);
 * - `do.shapes`: the Worker hands the request to the object, which fetches the local service (one object hop);
 * - `http.shapes`, `fixed.shapes`: the object tells the agent (over its WebSocket) to fetch; the agent POSTs the
 *   response body to `/push/<id>`, which the object pipes into the waiting response, through an
 *   IdentityTransformStream or a FixedLengthStream; a request body the agent GETs from `/pull/<id>`.
 * The relay floor (bench/peer/relay-floor) is the same path with bodies as WebSocket messages.
 * Nothing is checked or limited: a bench peer, not a relay to run.
 */

import { DurableObject } from "cloudflare:workers";

interface Env {
  readonly ORIGIN: string;
  readonly RELAY: DurableObjectNamespace<ShapesRelay>;
}

interface Waiting {
  resolve(response: Response): void;
  body: ReadableStream<Uint8Array> | null;
}

export class ShapesRelay extends DurableObject<Env> {
  private readonly pending = new Map<number, Waiting>();
  private nextId = 0;
  private agent: WebSocket | undefined;

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/connect") {
      const [client, server] = Object.values(new WebSocketPair());
      this.ctx.acceptWebSocket(server);
      this.agent = server;
      return new Response(null, { status: 101, webSocket: client });
    }
    if (url.pathname === "/origin") {
      return fetch(`${this.env.ORIGIN}${url.searchParams.get("target")}`, { method: request.method, headers: request.headers, body: request.body });
    }
    if (url.pathname.startsWith("/push/")) return this.push(request, url);
    if (url.pathname.startsWith("/pull/")) {
      const waiting = this.pending.get(Number(url.pathname.slice("/pull/".length)));
      const body = waiting?.body;
      if (!waiting || !body) return new Response("unknown", { status: 404 });
      waiting.body = null;
      return new Response(body);
    }
    const agent = this.agent ?? this.ctx.getWebSockets()[0];
    if (!agent) return new Response("no agent", { status: 502 });
    const id = this.nextId++;
    const answer = new Promise<Response>((resolve) => this.pending.set(id, { resolve, body: request.body }));
    const fixed = url.searchParams.get("fixed") === "1";
    agent.send(JSON.stringify({ id, method: request.method, target: url.searchParams.get("target") ?? "/", body: request.body !== null, fixed }));
    return answer;
  }

  /** The agent's response body for request `id`: piped into the waiting response; answered once it is through. */
  private async push(request: Request, url: URL): Promise<Response> {
    const id = Number(url.pathname.slice("/push/".length));
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    if (!waiting || !request.body) return new Response("unknown", { status: 404 });
    const headers = JSON.parse(request.headers.get("x-head") ?? "[]") as Array<[string, string]>;
    const status = Number(request.headers.get("x-status") ?? 502);
    const length = request.headers.get("x-length");
    const pipe = url.searchParams.get("fixed") === "1" && length !== null ? new FixedLengthStream(Number(length)) : new IdentityTransformStream();
    waiting.resolve(new Response(pipe.readable, { status, headers }));
    await request.body.pipeTo(pipe.writable);
    return new Response(null, { status: 204 });
  }
}

export default {
  fetch(request, env) {
    const url = new URL(request.url);
    const host = request.headers.get("host");
    const init = { method: request.method, headers: request.headers, body: request.body };
    if (host === "origin.shapes") return fetch(`${env.ORIGIN}${url.pathname}${url.search}`, init);
    const relay = env.RELAY.get(env.RELAY.idFromName("shapes"));
    const target = encodeURIComponent(url.pathname + url.search);
    if (host === "do.shapes") return relay.fetch(`https://relay/origin?target=${target}`, init);
    if (url.pathname === "/connect" || url.pathname.startsWith("/push/") || url.pathname.startsWith("/pull/")) return relay.fetch(request);
    return relay.fetch(`https://relay/r?target=${target}&fixed=${host === "fixed.shapes" ? 1 : 0}`, init);
  },
} satisfies ExportedHandler<Env>;
