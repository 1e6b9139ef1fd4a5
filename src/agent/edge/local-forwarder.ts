/**
 * The agent end of relayed exchanges: each stream from the edge becomes one HTTP request to the tunnel's
 * local address. Request body bytes are acknowledged once written to the local socket; response body
 * bytes go out no faster than the edge's window allows, pausing the local response while it is closed.
 * A local service that refuses or does not answer in time ends the stream with a reset the edge turns
 * into a 502 for the public client.
 */

import http from "node:http";
import https from "node:https";
import {
  BODY_CHANNEL_MIN_BYTES,
  DATA_FRAME_HEADROOM,
  encodeDataInPlace,
  HOP_BY_HOP_HEADERS,
  INITIAL_STREAM_WINDOW,
  MAX_DATA_CHUNK,
  NULL_BODY_STATUSES,
  parseContentLength,
  ResetCode,
  sendableCloseCode,
  type Frame,
  type FrameOf,
  type StreamFrame,
} from "../../tunnels/protocol.ts";
import type { OrderedSink } from "../../tunnels/framing.ts";
import { StreamCore } from "../../tunnels/stream-core.ts";
import { WindowBudget } from "../../tunnels/window-budget.ts";
import { combineObservers, type ExchangeInfo, type ExchangeObserver, type ExchangeTap } from "./exchange.ts";
import { connectLocalWebSocket, type LocalSocket } from "./local-websocket.ts";
import type { BodyChannelTarget } from "./edge-session.ts";
import { closeReason } from "../../close-reason.ts";
import { edgeConnections, localConnections, MAX_AGENT_STREAMS, MAX_BODY_CHANNELS } from "./connection-limits.ts";

/** What the forwarder needs to know about a tunnel. */
export interface LocalTunnel {
  readonly id: string;
  readonly name: string;
  readonly url: URL;
  readonly inspect: boolean;
  readonly taps: readonly ExchangeTap[];
}

export interface ForwarderOptions {
  send(frame: Frame): void;
  /**
   * Sends a data frame encoded in place (encodeDataInPlace) as it is; without it, response data goes out as
   * frames through `send`.
   */
  sendEncoded?(encoded: Uint8Array): void;
  /** Largest data frame body the edge takes (its welcome says; MAX_DATA_CHUNK when it does not). */
  maxDataChunk?(): number;
  /** The edge's body channel for large response bodies (its welcome offers one); without it, all go as frames. */
  bodyChannel?(): BodyChannelTarget | undefined;
  lookup(tunnelId: string): LocalTunnel | undefined;
  /** Prefix of exchange keys (the session id), so keys stay unique across reconnects. */
  sessionKey(): string;
  /** Time to connect to the local address (default 10 s). */
  connectTimeoutMs?: number;
  /** Time for the local service to send its response head (default 60 s). */
  responseTimeoutMs?: number;
  /** Marks the exchanges as replays (the agent sent them, not a public client). */
  replay?: boolean;
  /**
   * Request body bytes the sender may have unacknowledged per stream; a data frame past it resets the
   * stream. Default INITIAL_STREAM_WINDOW, what the protocol gives the edge; a replay hands its whole
   * body over at once from this process, so it is not held to a window.
   */
  receiveWindow?: number;
}

/** Most of an edge's refusal of a body channel read, and of its reason kept for the reset message. */
const REFUSAL_BYTES = 4096;
const REFUSAL_REASON_CHARS = 300;
const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "EADDRNOTAVAIL"]);

class AgentStream {
  closed = false;
  responded = false;
  /** The local response (or a refused upgrade's body) is complete: the end goes once the queue is sent. */
  responseDone = false;
  endSent = false;
  /** Response body bytes not yet sent (waiting for the end of the turn, or for the edge's window). */
  queue: Uint8Array[] = [];
  queuedBytes = 0;
  /** Response body out (within the edge's window), request body in (the edge held to ours). */
  readonly core: StreamCore;
  /** Where the request body goes, in order; set once the local exchange is opened. */
  sink: OrderedSink = { data: () => undefined, end: () => undefined };
  request?: http.ClientRequest;
  response?: http.IncomingMessage;
  /** For a relayed WebSocket: the agent's socket to the local service. */
  socket?: LocalSocket;
  /** The request method (a HEAD's response never has a body). */
  method = "";
  /** A body channel's POST carrying the response body to the edge. */
  channel?: http.ClientRequest;
  timers: Array<ReturnType<typeof setTimeout>> = [];
  /** Extra request window taken from the session's budget (see window-budget.ts). */
  boost = 0;
  boostAsked = false;

  constructor(
    readonly id: number,
    readonly tunnel: LocalTunnel,
    readonly observer: ExchangeObserver,
    readonly startNs: bigint,
    receiveWindow: number,
  ) {
    this.core = new StreamCore(id, { data: (bytes) => this.sink.data(bytes), end: () => this.sink.end() }, { headFirst: false, receiveWindow });
  }

  clearTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
  }
}

export class LocalForwarder {
  private readonly streams = new Map<number, AgentStream>();
  private readonly connectTimeoutMs: number;
  private readonly responseTimeoutMs: number;
  private readonly receiveWindow: number;
  private readonly budget = new WindowBudget();
  /** Streams whose request body started in the current message: a larger window is offered at its end. */
  private readonly bodies = new Set<AgentStream>();
  /** Streams with response bytes that arrived this turn: sent together at its end, in frames as large as the edge takes. */
  private readonly arrived = new Set<AgentStream>();
  private pumpScheduled = false;
  /** This forwarder's connections to the edge for body channels; closed when the session is gone. */
  private edgeConnections = edgeConnections();
  /** Streams whose body goes through a body channel now (at most MAX_BODY_CHANNELS). */
  private channels = 0;

  constructor(private readonly options: ForwarderOptions) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.responseTimeoutMs = options.responseTimeoutMs ?? 60_000;
    this.receiveWindow = options.receiveWindow ?? (options.replay ? Number.POSITIVE_INFINITY : INITIAL_STREAM_WINDOW);
  }

  get size(): number {
    return this.streams.size;
  }

  onFrame(frame: StreamFrame): void {
    if (frame.type === "request_head") return this.open(frame);
    const stream = this.streams.get(frame.stream);
    if (!stream) return;
    switch (frame.type) {
      case "data":
      case "end":
      case "window": {
        const violation = stream.core.onFrame(frame);
        if (violation) return this.reset(stream, violation.code, `the edge broke the protocol: ${violation.message}`);
        if (frame.type === "window") this.pump(stream);
        else if (frame.type === "data" && !stream.boostAsked) {
          stream.boostAsked = true;
          this.bodies.add(stream);
        }
        return;
      }
      case "reset":
        return this.close(stream, { code: frame.code, message: frame.message });
      case "ws_message":
        stream.socket?.send(frame.bytes, frame.binary);
        return;
      case "ws_close":
        stream.socket?.close(sendableCloseCode(frame.code), frame.reason);
        return this.close(stream);
      case "response_head":
        return this.reset(stream, ResetCode.protocolError, "response_head is sent by the agent, not the edge");
    }
  }

  /** Call after the frames of one message: a request body that did not end in it may have a larger window. */
  endBatch(): void {
    if (this.receiveWindow === Number.POSITIVE_INFINITY) return this.bodies.clear();
    for (const stream of this.bodies) {
      if (stream.closed) continue;
      const window = this.budget.grant(stream);
      if (window) this.options.send(window);
    }
    this.bodies.clear();
  }

  /** Ends every stream (the session is gone). */
  abortAll(message: string): void {
    for (const stream of [...this.streams.values()]) this.close(stream, { code: "agent_disconnected", message });
    this.edgeConnections.http.destroy();
    this.edgeConnections.https.destroy();
    this.edgeConnections = edgeConnections();
  }

  private open(head: FrameOf<"request_head">): void {
    if (this.streams.has(head.stream)) {
      // Never let a new exchange take over a live one: the open stream keeps its id, the new head is refused.
      this.options.send({ type: "reset", stream: head.stream, code: ResetCode.protocolError, message: `stream ${head.stream} is still open on this agent` });
      return;
    }
    if (this.streams.size >= MAX_AGENT_STREAMS) {
      const message = `the agent is serving ${MAX_AGENT_STREAMS} streams at once, the most it takes`;
      this.options.send({ type: "reset", stream: head.stream, code: ResetCode.tooManyStreams, message });
      return;
    }
    const tunnel = this.options.lookup(head.tunnel_id);
    if (!tunnel) {
      this.options.send({ type: "reset", stream: head.stream, code: ResetCode.unknownTunnel, message: `tunnel ${head.tunnel_id} is not open on this agent` });
      return;
    }
    const headers = relayedHeaders(head);
    // HTTP/1.1 needs a Host; the edge always sends the public one, a replay may not.
    if (!headers.some(([name]) => name.toLowerCase() === "host")) headers.unshift(["host", tunnel.url.host]);
    const startNs = process.hrtime.bigint();
    const info: ExchangeInfo = {
      key: `${this.options.sessionKey()}:${head.stream}`,
      tunnelName: tunnel.name,
      tunnelId: tunnel.id,
      inspect: tunnel.inspect,
      start: new Date(),
      startNs,
      method: head.method,
      target: head.target,
      headers,
      remoteAddr: head.client_addr,
      scheme: head.scheme,
      ...(this.options.replay ? { replay: true } : {}),
    };
    const stream = new AgentStream(head.stream, tunnel, combineObservers(tunnel.taps.map((tap) => tap.open(info))), startNs, this.receiveWindow);
    this.streams.set(head.stream, stream);
    if (head.upgrade === "websocket") this.openWebSocket(stream, head, headers);
    else this.openHttp(stream, head, headers);
  }

  private openHttp(stream: AgentStream, head: FrameOf<"request_head">, headers: Array<[string, string]>): void {
    const url = stream.tunnel.url;
    const secure = url.protocol === "https:";
    const request = (secure ? https : http).request({
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port || (secure ? 443 : 80),
      method: head.method,
      path: head.target,
      headers: headers.flat(),
      setHost: false,
      agent: secure ? localConnections.https : localConnections.http,
      // Local development servers commonly use self-signed certificates.
      rejectUnauthorized: false,
    });
    stream.request = request;
    stream.method = head.method;

    request.on("socket", (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => {
        this.reset(stream, ResetCode.upstreamTimeout, `could not connect to ${url.origin} within ${this.connectTimeoutMs / 1000} s`);
      }, this.connectTimeoutMs);
      stream.timers.push(timer);
      socket.once("connect", () => clearTimeout(timer));
    });
    stream.timers.push(
      setTimeout(() => {
        if (!stream.responded) this.reset(stream, ResetCode.upstreamTimeout, `${url.origin} did not answer within ${this.responseTimeoutMs / 1000} s`);
      }, this.responseTimeoutMs),
    );
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (stream.closed) return;
      if (!stream.responded && error.code && UNREACHABLE.has(error.code)) {
        this.reset(stream, ResetCode.upstreamUnreachable, `could not connect to ${url.origin}: ${error.message}`);
      } else {
        this.reset(stream, ResetCode.upstreamError, `the request to ${url.origin} failed: ${error.message}`);
      }
    });
    request.on("response", (response) => this.onResponse(stream, response));

    stream.sink = {
      data: (bytes) => {
        stream.observer.onRequestBody?.(bytes);
        request.write(bytes, () => {
          const window = stream.core.receive.acknowledge(bytes.byteLength);
          if (window && !stream.closed) this.options.send(window);
        });
      },
      end: () => {
        stream.observer.onRequestEnd?.();
        request.end();
      },
    };
  }

  /** The public client asked for a WebSocket: open one to the local service and relay its messages. */
  private openWebSocket(stream: AgentStream, head: FrameOf<"request_head">, headers: Array<[string, string]>): void {
    const origin = stream.tunnel.url.origin;
    stream.socket = connectLocalWebSocket(
      stream.tunnel.url,
      head.target,
      headers,
      {
        open: (responseHeaders) => {
          if (stream.closed) return stream.socket?.terminate();
          stream.responded = true;
          this.options.send({ type: "response_head", stream: stream.id, status: 101, status_text: "Switching Protocols", headers: responseHeaders });
          stream.observer.onResponseHead?.({ status: 101, statusText: "Switching Protocols", headers: responseHeaders, httpVersion: "1.1" });
        },
        message: (bytes, binary) => {
          if (!stream.closed) this.options.send({ type: "ws_message", stream: stream.id, binary, bytes });
        },
        close: (code, reason) => {
          if (stream.closed) return;
          this.options.send({ type: "ws_close", stream: stream.id, code: sendableCloseCode(code), reason: closeReason(reason) });
          stream.observer.onResponseEnd?.(process.hrtime.bigint() - stream.startNs);
          this.close(stream);
        },
        refused: (status, statusText, responseHeaders, body) => {
          if (stream.closed) return;
          stream.responded = true;
          this.options.send({ type: "response_head", stream: stream.id, status, status_text: statusText, headers: responseHeaders });
          stream.observer.onResponseHead?.({ status, statusText, headers: responseHeaders, httpVersion: "1.1" });
          stream.queue.push(body);
          stream.queuedBytes += body.byteLength;
          stream.responseDone = true;
          this.pump(stream);
        },
        failed: (error) => {
          if (stream.closed) return;
          const unreachable = error.code !== undefined && UNREACHABLE.has(error.code);
          this.reset(
            stream,
            unreachable ? ResetCode.upstreamUnreachable : ResetCode.upstreamError,
            `could not open a WebSocket to ${origin}: ${error.message}`,
          );
        },
      },
      { handshakeTimeoutMs: this.connectTimeoutMs },
    );
  }

  private onResponse(stream: AgentStream, response: http.IncomingMessage): void {
    if (stream.closed) {
      response.destroy();
      return;
    }
    stream.responded = true;
    stream.response = response;
    stream.clearTimers();
    const headers: Array<[string, string]> = [];
    for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) {
      if (!HOP_BY_HOP_HEADERS.has(response.rawHeaders[i].toLowerCase())) headers.push([response.rawHeaders[i], response.rawHeaders[i + 1]]);
    }
    const status = response.statusCode ?? 502;
    const channel = this.channelFor(stream, response, status);
    this.options.send({
      type: "response_head",
      stream: stream.id,
      status,
      status_text: response.statusMessage ?? "",
      headers,
      ...(channel ? { body_channel: true } : {}),
    });
    stream.observer.onResponseHead?.({ status, statusText: response.statusMessage ?? "", headers, httpVersion: response.httpVersion });
    response.on("error", (error) => {
      if (!stream.closed) this.reset(stream, ResetCode.upstreamError, `the response from ${stream.tunnel.url.origin} broke off: ${error.message}`);
    });
    response.on("aborted", () => {
      if (!stream.closed && !stream.responseDone) this.reset(stream, ResetCode.upstreamError, `${stream.tunnel.url.origin} closed the connection mid-response`);
    });
    if (channel) return this.sendThroughChannel(stream, response, channel);
    response.on("data", (chunk: Buffer) => {
      if (stream.closed) return;
      stream.observer.onResponseBody?.(chunk);
      stream.queue.push(chunk);
      stream.queuedBytes += chunk.byteLength;
      // more than the window can take waits in the local socket, not here
      if (stream.queuedBytes > stream.core.send.available) response.pause();
      this.pumpAtEndOfTurn(stream);
    });
    response.on("end", () => {
      stream.responseDone = true;
      this.pump(stream);
    });
  }

  /** The body channel a response's body goes through: a large body of known length, when the edge offered one and takes its size. */
  private channelFor(stream: AgentStream, response: http.IncomingMessage, status: number): { target: BodyChannelTarget; length: number } | undefined {
    const target = this.options.bodyChannel?.();
    // past the channels' bound a large body goes in frames, as to an edge without channels (connection-limits.ts)
    if (!target || this.channels >= MAX_BODY_CHANNELS || NULL_BODY_STATUSES.has(status) || status < 200 || stream.method.toUpperCase() === "HEAD")
      return undefined;
    const length = parseContentLength(response.headers["content-length"]);
    return length !== undefined && length >= BODY_CHANNEL_MIN_BYTES && length <= target.maxBytes ? { target, length } : undefined;
  }

  /**
   * Sends the response body as one POST to the edge (protocol.ts, "Body channels"): the local response is piped
   * into it, so TCP's backpressure on both sockets paces it and nothing waits here. The edge answers 204 once
   * the public client has taken all of it; anything else (or a broken connection) ends the stream.
   */
  private sendThroughChannel(stream: AgentStream, response: http.IncomingMessage, channel: { target: BodyChannelTarget; length: number }): void {
    const url = new URL(`${channel.target.url}&stream=${stream.id}`);
    const secure = url.protocol === "https:";
    const post = (secure ? https : http).request(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${channel.target.token}`,
        "content-type": "application/octet-stream",
        "content-length": String(channel.length),
        "user-agent": channel.target.userAgent,
      },
      agent: secure ? this.edgeConnections.https : this.edgeConnections.http,
    });
    stream.channel = post;
    this.channels++;
    post.on("response", (answer) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      answer.on("data", (chunk: Buffer) => {
        if (kept < REFUSAL_BYTES) chunks.push(chunk.subarray(0, REFUSAL_BYTES - kept));
        kept += chunk.byteLength;
      });
      answer.on("end", () => {
        if (stream.closed) return;
        if (answer.statusCode === 204) {
          stream.responseDone = true;
          stream.observer.onResponseEnd?.(process.hrtime.bigint() - stream.startNs);
          return this.close(stream);
        }
        const text = Buffer.concat(chunks).toString("utf8");
        let why = text.trim();
        try {
          const msg = (JSON.parse(text) as { msg?: unknown }).msg;
          if (typeof msg === "string") why = msg;
        } catch {
          // not the edge's JSON error envelope: its text as it is
        }
        // a reset's message is at most 4096 characters (protocol.ts): the edge's reason is cut well inside it
        why = why.slice(0, REFUSAL_REASON_CHARS);
        this.reset(stream, ResetCode.cancelled, `the edge did not take the response body (HTTP ${answer.statusCode}): ${why}`);
      });
      answer.on("error", () => undefined);
    });
    post.on("error", (error) => {
      if (!stream.closed) this.reset(stream, ResetCode.cancelled, `the response body's channel to the edge failed: ${error.message}`);
    });
    response.on("data", (chunk: Buffer) => {
      if (!stream.closed) stream.observer.onResponseBody?.(chunk);
    });
    response.pipe(post);
  }

  /**
   * Response bytes that arrive in one turn (several 64 KiB socket reads, often) go out together at its end:
   * fewer, larger data frames, each a message of its own that the edge writes to the client in one piece.
   */
  private pumpAtEndOfTurn(stream: AgentStream): void {
    this.arrived.add(stream);
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      const streams = [...this.arrived];
      this.arrived.clear();
      for (const each of streams) this.pump(each);
    });
  }

  /** Sends queued response data the window allows; pauses the local response while the window is shut. */
  private pump(stream: AgentStream): void {
    if (stream.closed || (!stream.response && !stream.responseDone)) return;
    const largest = this.options.maxDataChunk?.() ?? MAX_DATA_CHUNK;
    while (stream.queuedBytes > 0) {
      // a window down to a sliver waits for the edge's acknowledgement (sent once the edge could be stuck)
      const size = stream.core.send.nextFrameSize(stream.queuedBytes, largest);
      if (size === 0) break;
      const frame = stream.core.send.frame(this.takeQueued(stream, size));
      stream.core.send.sent(frame);
      if (this.options.sendEncoded) this.options.sendEncoded(encodeDataInPlace(frame));
      else this.options.send(frame);
    }
    if (stream.queuedBytes > 0) stream.response?.pause();
    else if (!stream.responseDone) stream.response?.resume();
    if (stream.queuedBytes === 0 && stream.responseDone && !stream.endSent) {
      stream.endSent = true;
      this.options.send(stream.core.send.end());
      stream.observer.onResponseEnd?.(process.hrtime.bigint() - stream.startNs);
      this.close(stream);
    }
  }

  /** The next `size` queued bytes, copied once into a buffer with room for the frame's header before them. */
  private takeQueued(stream: AgentStream, size: number): Uint8Array {
    const buffer = Buffer.allocUnsafe(DATA_FRAME_HEADROOM + size);
    let offset = DATA_FRAME_HEADROOM;
    while (offset < buffer.byteLength) {
      const chunk = stream.queue[0];
      const part = Math.min(chunk.byteLength, buffer.byteLength - offset);
      buffer.set(part === chunk.byteLength ? chunk : chunk.subarray(0, part), offset);
      offset += part;
      if (part === chunk.byteLength) stream.queue.shift();
      else stream.queue[0] = chunk.subarray(part);
    }
    stream.queuedBytes -= size;
    return buffer.subarray(DATA_FRAME_HEADROOM);
  }

  /** The agent ends a stream: tells the edge, then closes it locally. */
  private reset(stream: AgentStream, code: string, message: string): void {
    if (stream.closed) return;
    this.options.send(stream.core.reset({ code, message }));
    this.close(stream, { code, message });
  }

  private close(stream: AgentStream, error?: { code: string; message: string }): void {
    if (stream.closed) return;
    stream.closed = true;
    stream.clearTimers();
    this.streams.delete(stream.id);
    this.bodies.delete(stream);
    this.arrived.delete(stream);
    stream.queue = [];
    stream.queuedBytes = 0;
    this.budget.release(stream);
    if (stream.channel) this.channels--;
    if (error || (stream.request && !stream.request.writableFinished)) {
      stream.request?.destroy();
      stream.response?.destroy();
      stream.socket?.terminate();
      stream.channel?.destroy();
    }
    stream.observer.onClose?.({ error, durationNs: process.hrtime.bigint() - stream.startNs });
  }
}

/** The request headers the local service gets: the public client's, plus X-Forwarded-For/-Proto/-Host. */
function relayedHeaders(head: FrameOf<"request_head">): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  let host = "";
  let forwardedFor: string | undefined;
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP_HEADERS.has(lower)) continue;
    if (lower === "host") host = value;
    if (lower === "x-forwarded-for") {
      forwardedFor = forwardedFor ? `${forwardedFor}, ${value}` : value;
      continue;
    }
    // the edge answered any `Expect: 100-continue` already; the body is on its way
    if (lower === "x-forwarded-proto" || lower === "x-forwarded-host" || lower === "expect") continue;
    headers.push([name, value]);
  }
  if (head.client_addr) {
    const last = forwardedFor?.split(",").at(-1)?.trim();
    forwardedFor = !forwardedFor ? head.client_addr : last === head.client_addr ? forwardedFor : `${forwardedFor}, ${head.client_addr}`;
  }
  if (forwardedFor) headers.push(["x-forwarded-for", forwardedFor]);
  headers.push(["x-forwarded-proto", head.scheme]);
  if (host) headers.push(["x-forwarded-host", host]);
  return headers;
}
