/**
 * The agent end of relayed exchanges, in node:http: each stream from the edge becomes one HTTP request to the
 * tunnel's local address. The relay core (src/relay/) keeps the streams' state; this adapter moves bodies.
 * Request body bytes are acknowledged once written to the local socket; response body bytes go out no faster
 * than the edge's window allows, pausing the local response while it is closed. A local service that refuses
 * or does not answer in time ends the stream with a reset the edge turns into a 502 for the public client.
 */

import type http from "node:http";
import { encodeDataInPlace } from "../../relay/frame-codec.ts";
import type { FrameOf, StreamFrame } from "../../relay/frames.ts";
import { endToEndHeaders, forwardedRequestHeaders, sendableCloseCode } from "../../relay/http-semantics.ts";
import { headerListProblem, MAX_STATUS_TEXT_CHARS } from "../../relay/head-bounds.ts";
import { INITIAL_STREAM_WINDOW, MAX_DATA_CHUNK, ResetCode } from "../../relay/protocol.ts";
import { StreamTable, type StreamFailure } from "../../relay/stream-table.ts";
import { WindowBudget } from "../../relay/window-budget.ts";
import { AgentStream, type ForwarderOptions } from "./agent-stream.ts";
import { channelFor, sendThroughChannel } from "./body-channel-post.ts";
import { edgeConnections, MAX_AGENT_STREAMS, MAX_BODY_CHANNELS } from "./connection-limits.ts";
import { combineObservers, type ExchangeInfo } from "./exchange.ts";
import { openLocalRequest } from "./local-request.ts";
import { openWebSocket } from "./websocket-stream.ts";

export type { ForwarderOptions, LocalTunnel } from "./agent-stream.ts";

export class LocalForwarder {
  private readonly table: StreamTable<AgentStream>;
  private readonly timeouts: { readonly connectTimeoutMs: number; readonly responseTimeoutMs: number };
  private readonly receiveWindow: number;
  /** Streams with response bytes that arrived this turn: sent together at its end, in frames as large as the edge takes. */
  private readonly arrived = new Set<AgentStream>();
  private pumpScheduled = false;
  /** This forwarder's connections to the edge for body channels; closed when the session is gone. */
  private edgeConnections = edgeConnections();
  /** Streams whose body goes through a body channel now (at most MAX_BODY_CHANNELS). */
  private channels = 0;

  constructor(private readonly options: ForwarderOptions) {
    this.timeouts = { connectTimeoutMs: options.connectTimeoutMs ?? 10_000, responseTimeoutMs: options.responseTimeoutMs ?? 60_000 };
    this.receiveWindow = options.receiveWindow ?? (options.replay ? Number.POSITIVE_INFINITY : INITIAL_STREAM_WINDOW);
    // a replay's window is unbounded: no larger one to offer
    const budget = this.receiveWindow === Number.POSITIVE_INFINITY ? undefined : new WindowBudget();
    this.table = new StreamTable({ send: options.send, peer: "the edge", budget, closed: (stream, failure) => this.closed(stream, failure) });
  }

  get size(): number {
    return this.table.size;
  }

  onFrame(frame: StreamFrame): void {
    if (frame.type === "request_head") return this.open(frame);
    const stream = this.table.get(frame.stream);
    if (!stream) return;
    switch (frame.type) {
      case "data":
      case "end":
      case "window":
        if (this.table.flow(stream, frame)) this.pump(stream);
        return;
      case "reset":
        return this.table.close(stream, { code: frame.code, message: frame.message });
      case "ws_message":
        stream.socket?.send(frame.bytes, frame.binary);
        return;
      case "ws_close":
        stream.socket?.close(sendableCloseCode(frame.code), frame.reason);
        return this.table.close(stream);
      case "response_head":
        return this.table.reset(stream, ResetCode.protocolError, "response_head is sent by the agent, not the edge");
    }
  }

  /** Call after the frames of one message: a request body that did not end in it may have a larger window. */
  endBatch(): void {
    this.table.endBatch();
  }

  /** Ends every stream (the session is gone). */
  abortAll(message: string): void {
    for (const stream of this.table.list()) this.table.close(stream, { code: "agent_disconnected", message });
    this.edgeConnections.http.destroy();
    this.edgeConnections.https.destroy();
    this.edgeConnections = edgeConnections();
  }

  private open(head: FrameOf<"request_head">): void {
    // Never let a new exchange take over a live one: the open stream keeps its id, the new head is refused.
    if (this.table.has(head.stream))
      return this.table.refuse(head.stream, { code: ResetCode.protocolError, message: `stream ${head.stream} is still open on this agent` });
    if (this.table.size >= MAX_AGENT_STREAMS)
      return this.table.refuse(head.stream, {
        code: ResetCode.tooManyStreams,
        message: `the agent is serving ${MAX_AGENT_STREAMS} streams at once, the most it takes`,
      });
    const tunnel = this.options.lookup(head.tunnel_id);
    if (!tunnel) return this.table.refuse(head.stream, { code: ResetCode.unknownTunnel, message: `tunnel ${head.tunnel_id} is not open on this agent` });
    const headers = forwardedRequestHeaders(head);
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
      ...(head.decisions ? { rateLimits: head.decisions } : {}),
    };
    const stream = new AgentStream(head.stream, tunnel, combineObservers(tunnel.taps.map((tap) => tap.open(info))), startNs, this.receiveWindow);
    this.table.add(stream);
    if (head.upgrade !== "websocket") {
      const local = {
        ...this.timeouts,
        send: this.options.send,
        reset: this.reset,
        respond: (response: http.IncomingMessage) => this.onResponse(stream, response),
      };
      return openLocalRequest(stream, head, headers, local);
    }
    const relay = {
      send: this.options.send,
      pump: (each: AgentStream) => this.pump(each),
      reset: this.reset,
      close: (each: AgentStream) => this.table.close(each),
    };
    openWebSocket(stream, head, headers, relay, this.timeouts.connectTimeoutMs);
  }

  private readonly reset = (stream: AgentStream, code: string, message: string) => this.table.reset(stream, code, message);

  private onResponse(stream: AgentStream, response: http.IncomingMessage): void {
    if (stream.closed) return void response.destroy();
    stream.responded = true;
    stream.response = response;
    stream.clearTimers();
    const headers = endToEndHeaders(response.rawHeaders);
    const status = response.statusCode ?? 502;
    const origin = stream.tunnel.url.origin;
    // the edge would refuse the head and fail the stream anyway: say why here (Node takes up to 2000 fields)
    const problem = headerListProblem(headers);
    if (problem) return this.reset(stream, ResetCode.upstreamError, `the response head from ${origin} cannot be relayed: ${problem}`);
    // past the channels' bound a large body goes in frames, as to an edge without channels (connection-limits.ts)
    const plan = this.channels < MAX_BODY_CHANNELS ? channelFor(this.options.bodyChannel?.(), response, status, stream.method) : undefined;
    const statusText = (response.statusMessage ?? "").slice(0, MAX_STATUS_TEXT_CHARS);
    this.options.send({ type: "response_head", stream: stream.id, status, status_text: statusText, headers, ...(plan ? { body_channel: true } : {}) });
    stream.observer.onResponseHead?.({ status, statusText, headers, httpVersion: response.httpVersion });
    response.on("error", (error) => {
      if (!stream.closed) this.reset(stream, ResetCode.upstreamError, `the response from ${origin} broke off: ${error.message}`);
    });
    response.on("aborted", () => {
      if (!stream.closed && !stream.out.done) this.reset(stream, ResetCode.upstreamError, `${origin} closed the connection mid-response`);
    });
    if (plan) {
      const delivered = (each: AgentStream) => {
        each.out.finish();
        each.observer.onResponseEnd?.(each.elapsedNs());
        this.table.close(each);
      };
      stream.channel = sendThroughChannel(stream, response, plan, { connections: this.edgeConnections, delivered, reset: this.reset });
      this.channels++;
      return;
    }
    response.on("data", (chunk: Buffer) => {
      if (stream.closed) return;
      stream.observer.onResponseBody?.(chunk);
      stream.out.push(chunk);
      // more than the window can take waits in the local socket, not here
      if (stream.out.waiting > stream.core.send.available) response.pause();
      this.pumpAtEndOfTurn(stream);
    });
    response.on("end", () => {
      stream.out.finish();
      this.pump(stream);
    });
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
    if (stream.closed || (!stream.response && !stream.out.done)) return;
    const { sendEncoded } = this.options;
    for (const frame of stream.out.frames(this.options.maxDataChunk?.() ?? MAX_DATA_CHUNK)) {
      if (sendEncoded) sendEncoded(encodeDataInPlace(frame));
      else this.options.send(frame);
    }
    if (stream.out.waiting > 0) stream.response?.pause();
    else if (!stream.out.done) stream.response?.resume();
    const end = stream.out.end();
    if (!end) return;
    this.options.send(end);
    stream.observer.onResponseEnd?.(stream.elapsedNs());
    this.table.close(stream);
  }

  /** A stream ended (StreamTable): its local exchange ends with it. */
  private closed(stream: AgentStream, error: StreamFailure | undefined): void {
    stream.clearTimers();
    this.arrived.delete(stream);
    stream.out.clear();
    if (stream.channel) this.channels--;
    if (error || (stream.request && !stream.request.writableFinished)) {
      stream.request?.destroy();
      stream.response?.destroy();
      stream.socket?.terminate();
      stream.channel?.destroy();
    }
    stream.observer.onClose?.({ error, durationNs: stream.elapsedNs() });
  }
}
