/**
 * The edge end of relayed exchanges: one stream per public request, multiplexed over the agent's WebSocket.
 * Request bodies go out no faster than the agent's window allows; response bodies are written to the
 * public client's stream and acknowledged (a `window` frame) only once the client has taken them, so a
 * slow client holds back its own stream and nothing else. A response whose head, body and end arrive in
 * one message (a small one) is answered with the whole body at once, without a stream. A large response body
 * may come through a body channel instead (protocol.ts): the agent's own POST, piped into the client's stream.
 */

import {
  BODY_CHANNEL_MAX_BYTES,
  DATA_FRAME_HEADROOM,
  encodeDataInPlace,
  HOP_BY_HOP_HEADERS,
  NULL_BODY_STATUSES,
  parseContentLength,
  ResetCode,
  type Frame,
  type FrameOf,
  type StreamFrame,
} from "./protocol.ts";
import { StreamCore } from "./stream-core.ts";
import { WindowBudget } from "./window-budget.ts";

export interface RelayRequest {
  readonly tunnelId: string;
  readonly method: string;
  /** Path and query. */
  readonly target: string;
  readonly headers: Headers;
  readonly clientAddr: string;
  readonly scheme: string;
  /** The public host (sent as the Host header, and named in error messages). */
  readonly host: string;
  readonly body: ReadableStream<Uint8Array> | null;
  /** The public client asks for a WebSocket. */
  readonly upgrade?: boolean;
}

export interface StreamFailure {
  readonly code: string;
  readonly message: string;
}

export interface EdgeStreamsOptions {
  send(frame: Frame): void;
  /** Sends a frame already encoded (a request body's data frame, encoded where it was read). */
  sendEncoded(encoded: Uint8Array): void;
  /** A stream id no live stream or socket of the session holds (see stream-ids.ts). */
  allocateId(): number;
  /** Largest data frame body the agent takes (its hello says; MAX_DATA_CHUNK for an agent that did not). */
  agentDataChunk(): number;
  /** The public client's response when a stream fails before the agent answered. */
  failureResponse(failure: StreamFailure, host: string): Response;
  /**
   * The agent's local WebSocket is open: accept the public client's and answer 101. From then on the
   * stream's messages are relayed by the session object, not here.
   */
  acceptWebSocket(stream: number, request: RelayRequest, headers: Headers): Response;
  /** How long a body channel's POST and its head may wait for each other (default BODY_CHANNEL_ARRIVAL_MS). */
  channelWaitMs?(): number;
}

/**
 * How long the edge waits for an announced body channel's POST to arrive (the agent sends it right after the
 * head), or for the head of a POST that overtook it. Past it the stream is reset: the public client is not left
 * waiting on an agent that never sends it. `TUNNEL_BODY_CHANNEL_WAIT_MS` sets another.
 */
export const BODY_CHANNEL_ARRIVAL_MS = 30_000;

/** What a body channel's POST is answered: the body got through, or why not (an HTTP status and a message). */
export type BodyChannelOutcome = { readonly ok: true } | { readonly ok: false; readonly status: number; readonly message: string };

/** A response body announced to come through a body channel. */
interface BodyChannel {
  readonly length: number;
  /** The public client's body stream, once the stream is answered. */
  writable?: WritableStream<Uint8Array>;
  /** The agent's POST body, once it arrived; it may come before the head's message was read. */
  body?: ReadableStream<Uint8Array>;
  /** The POST's content-length. */
  bodyLength?: number;
  settle?: (outcome: BodyChannelOutcome) => void;
  readonly stop: AbortController;
  timer?: ReturnType<typeof setTimeout>;
}
/**
 * Carries the public client's own `Accept-Encoding` from the Worker to the session object: "" when it sent
 * none, absent when the platform did not replace it. The relay subrequest keeps the platform's header and
 * only the request head the agent gets has the client's: with the header removed from the subrequest,
 * bench:tunnel's 10 MiB download through a tunnel fell from ~0.30 × to ~0.13 × the origin route.
 */
export const CLIENT_ACCEPT_ENCODING_HEADER = "x-tollgate-client-accept-encoding";

/**
 * The relay subrequest's headers: the client's, with what the platform replaced marked for `open`.
 * Cloudflare sets every incoming request's `Accept-Encoding` to `br, gzip` before the Worker runs and keeps
 * the client's value in `request.cf.clientAcceptEncoding` ("the original value of the Accept-Encoding header
 * if Cloudflare modified it"); Miniflare under `wrangler dev` does the same, with "" when the client sent
 * none. Absent, the header is the client's own. A marker the client sent itself is dropped.
 */
export function clientRequestHeaders(headers: Headers, cf: unknown): Headers {
  const original = (cf as { clientAcceptEncoding?: unknown } | undefined)?.clientAcceptEncoding;
  if (typeof original !== "string" && !headers.has(CLIENT_ACCEPT_ENCODING_HEADER)) return headers;
  const marked = new Headers(headers);
  if (typeof original === "string") marked.set(CLIENT_ACCEPT_ENCODING_HEADER, original);
  else marked.delete(CLIENT_ACCEPT_ENCODING_HEADER);
  return marked;
}

class EdgeStream {
  closed = false;
  answered = false;
  /** The agent's response head, until the stream is answered at the end of the message that carried it. */
  head: FrameOf<"response_head"> | undefined;
  /** Body bytes that arrived before the answer. */
  early: Uint8Array[] = [];
  /** The agent's end arrived (after all its data). */
  ended = false;
  writer?: WritableStreamDefaultWriter<Uint8Array>;
  requestReader?: ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>;
  /** Extra response window taken from the session's budget (see window-budget.ts). */
  boost = 0;
  boostAsked = false;
  /** Set when the response body comes through a body channel. */
  channel?: BodyChannel;
  /** A body channel's POST that arrived before the head's message was read. */
  earlyChannel?: { body: ReadableStream<Uint8Array>; length: number; settle(outcome: BodyChannelOutcome): void; timer: ReturnType<typeof setTimeout> };
  /** Request body out (within the agent's window), response body in (the agent held to ours). */
  core!: StreamCore;
  private windowWaiters: Array<() => void> = [];

  constructor(
    readonly id: number,
    readonly request: RelayRequest,
    readonly answer: (response: Response) => void,
  ) {}

  /** Resolves when the window grows or the stream closes. */
  windowChanged(): Promise<void> {
    return new Promise((resolve) => this.windowWaiters.push(resolve));
  }

  wake(): void {
    const waiters = this.windowWaiters;
    this.windowWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

export class EdgeStreams {
  private readonly streams = new Map<number, EdgeStream>();
  private readonly heads = new Set<EdgeStream>();
  /** Streams whose response body started in the current message: a larger window is offered at its end. */
  private readonly bodies = new Set<EdgeStream>();
  private readonly budget = new WindowBudget();
  /**
   * Streams whose end came but whose client has not taken all the body yet: up to their window is still held
   * here, so they keep their boost and count as in flight until it is taken (stream-limits.ts).
   */
  private readonly draining = new Set<EdgeStream>();

  constructor(private readonly options: EdgeStreamsOptions) {}

  private channelWaitMs(): number {
    return this.options.channelWaitMs?.() ?? BODY_CHANNEL_ARRIVAL_MS;
  }

  get size(): number {
    return this.streams.size;
  }

  /** Streams that hold memory here: open ones, and ended ones whose client is still taking the body. */
  get inFlight(): number {
    return this.streams.size + this.draining.size;
  }

  has(id: number): boolean {
    return this.streams.has(id);
  }

  /** Sends the request to the agent; resolves with the response once the agent's response head arrives. */
  open(request: RelayRequest): Promise<Response> {
    const id = this.options.allocateId();
    let answer!: (response: Response) => void;
    const response = new Promise<Response>((resolve) => (answer = resolve));
    const stream = new EdgeStream(id, request, answer);
    stream.core = new StreamCore(
      id,
      {
        data: (bytes) => this.writeResponseBody(stream, bytes),
        end: () => this.endResponseBody(stream),
      },
      { headFirst: true },
    );
    this.streams.set(id, stream);

    // The public Host travels in the head: a subrequest to the session object carries the object's own host.
    const headers: Array<[string, string]> = [["host", request.host]];
    const clientAcceptEncoding = request.headers.get(CLIENT_ACCEPT_ENCODING_HEADER);
    request.headers.forEach((value, name) => {
      if (name === "host" || name === CLIENT_ACCEPT_ENCODING_HEADER || HOP_BY_HOP_HEADERS.has(name)) return;
      if (name === "accept-encoding" && clientAcceptEncoding !== null) {
        if (clientAcceptEncoding !== "") headers.push([name, clientAcceptEncoding]);
        return;
      }
      headers.push([name, value]);
    });
    if (clientAcceptEncoding && !request.headers.has("accept-encoding")) headers.push(["accept-encoding", clientAcceptEncoding]);
    this.options.send({
      type: "request_head",
      stream: id,
      tunnel_id: request.tunnelId,
      method: request.method,
      target: request.target,
      headers,
      client_addr: request.clientAddr,
      scheme: request.scheme,
      ...(request.upgrade ? { upgrade: "websocket" as const } : {}),
    });
    if (!request.upgrade) void this.sendRequestBody(stream);
    return response;
  }

  onFrame(frame: StreamFrame): void {
    const stream = this.streams.get(frame.stream);
    if (!stream) return; // late frames of a stream that already ended
    switch (frame.type) {
      case "response_head":
        return this.onResponseHead(stream, frame);
      case "data":
      case "end":
      case "window": {
        if (stream.channel && frame.type !== "window")
          return this.reset(stream, ResetCode.protocolError, `a ${frame.type} frame for a body sent through a body channel`);
        const violation = stream.core.onFrame(frame);
        if (violation) return this.reset(stream, violation.code, `the agent broke the protocol: ${violation.message}`);
        if (frame.type === "window") stream.wake();
        else if (frame.type === "data" && !stream.boostAsked) {
          stream.boostAsked = true;
          this.bodies.add(stream);
        }
        return;
      }
      case "reset":
        return this.fail(stream, { code: frame.code, message: frame.message });
      case "request_head":
        return this.reset(stream, ResetCode.protocolError, "request_head is sent by the edge, not the agent");
    }
  }

  /** Call after the frames of one message: answers the streams whose head arrived in it. */
  endBatch(): void {
    for (const stream of this.heads) this.answer(stream);
    this.heads.clear();
    // A body that did not end in the message that started it is a large one: let the agent send more ahead.
    for (const stream of this.bodies) {
      if (stream.closed || stream.ended) continue;
      const window = this.budget.grant(stream);
      if (window) this.options.send(window);
    }
    this.bodies.clear();
  }

  /** Fails every stream of one tunnel (it stopped), telling the agent. */
  failTunnel(tunnelId: string, failure: StreamFailure): void {
    for (const stream of [...this.streams.values()]) if (stream.request.tunnelId === tunnelId) this.reset(stream, failure.code, failure.message);
  }

  /** Fails every stream (the agent's connection is gone). */
  failAll(failure: StreamFailure): void {
    for (const stream of [...this.streams.values()]) this.fail(stream, failure);
  }

  /**
   * A body channel's POST for stream `id`, of `length` bytes (its content-length): its body is piped into the
   * public client's response. Resolves once the client has taken all of it, or with why not (no such stream,
   * not announced, a second POST, a length other than the head's, broke off).
   */
  attachBody(id: number, body: ReadableStream<Uint8Array>, length: number): Promise<BodyChannelOutcome> {
    const stream = this.streams.get(id);
    if (!stream || stream.closed) return refuse(body, 404, `stream ${id} is not open on this session`);
    if (stream.earlyChannel || stream.channel?.body) return refuse(body, 409, `stream ${id} already has its body channel`);
    if (stream.answered && !stream.channel) return refuse(body, 409, `stream ${id} was not announced with a body channel`);
    if (!stream.channel && stream.head) return refuse(body, 409, `stream ${id} was not announced with a body channel`);
    return new Promise((settle) => {
      if (stream.channel) {
        stream.channel.body = body;
        stream.channel.bodyLength = length;
        stream.channel.settle = settle;
        if (stream.channel.writable) void this.pipeChannel(stream, stream.channel);
      } else {
        // The POST overtook the head's message; the head decides.
        const timer = setTimeout(() => {
          if (!stream.closed)
            this.reset(stream, ResetCode.protocolError, `the response head of a body channel's POST did not arrive within ${this.channelWaitMs() / 1000} s`);
        }, this.channelWaitMs());
        stream.earlyChannel = { body, length, settle, timer };
      }
    });
  }

  private async sendRequestBody(stream: EdgeStream): Promise<void> {
    const body = stream.request.body;
    if (body) {
      const largest = this.options.agentDataChunk();
      const reader = bodyReader(body, largest);
      stream.requestReader = reader.reader;
      const { send } = stream.core;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (let offset = 0; offset < value.byteLength; ) {
            let size = send.nextFrameSize(value.byteLength - offset, largest);
            while (!stream.closed && size === 0) {
              await stream.windowChanged();
              size = send.nextFrameSize(value.byteLength - offset, largest);
            }
            if (stream.closed) return;
            const frame = send.frame(value.subarray(offset, offset + size));
            send.sent(frame);
            // Only a read's first frame has the headroom before it free; later ones share the bytes still queued.
            if (reader.headroom && offset === 0) this.options.sendEncoded(encodeDataInPlace(frame));
            else this.options.send(frame);
            offset += frame.bytes.byteLength;
          }
        }
      } catch (error) {
        if (!stream.closed) this.reset(stream, ResetCode.cancelled, `the public client's request body broke off: ${(error as Error).message}`);
        return;
      }
    }
    if (!stream.closed) this.options.send(stream.core.send.end());
  }

  private onResponseHead(stream: EdgeStream, frame: FrameOf<"response_head">): void {
    if (stream.answered || stream.head) return this.reset(stream, ResetCode.protocolError, "a second response head");
    // A 101 is the answer to a WebSocket upgrade only; anywhere else the public client gets a clear 502.
    if (frame.status === 101 && !stream.request.upgrade) return this.reset(stream, ResetCode.upstreamError, "the local service switched protocols unasked");
    // an interim response is the agent's to consume; a final one answers the client (the runtime refuses 1xx)
    if (frame.status < 200 && frame.status !== 101)
      return this.reset(stream, ResetCode.protocolError, `an interim response head (${frame.status}) for the public client`);
    if (frame.body_channel) return this.onChannelHead(stream, frame);
    if (stream.earlyChannel) {
      const early = stream.earlyChannel;
      stream.earlyChannel = undefined;
      clearTimeout(early.timer);
      early.settle({ ok: false, status: 409, message: `stream ${stream.id} was not announced with a body channel` });
      void early.body.cancel().catch(() => undefined);
    }
    stream.head = frame;
    // A WebSocket is accepted at once: messages may follow in the same batch.
    if (frame.status === 101) return this.answer(stream);
    this.heads.add(stream);
    stream.core.receive.open();
  }

  /** A head whose body comes through a body channel: no data frames follow (the receiving half stays shut). */
  private onChannelHead(stream: EdgeStream, frame: FrameOf<"response_head">): void {
    if (NULL_BODY_STATUSES.has(frame.status) || stream.request.method.toUpperCase() === "HEAD" || stream.request.upgrade) {
      return this.reset(stream, ResetCode.protocolError, "a body channel for a response that has no body");
    }
    const length = parseContentLength(frame.headers.find(([name]) => name.toLowerCase() === "content-length")?.[1]);
    if (length === undefined) return this.reset(stream, ResetCode.protocolError, "a body channel for a response without a valid content-length");
    if (length > BODY_CHANNEL_MAX_BYTES)
      return this.reset(stream, ResetCode.protocolError, `a body channel for ${length} bytes, more than the ${BODY_CHANNEL_MAX_BYTES} welcome allowed`);
    stream.head = frame;
    stream.channel = { length, stop: new AbortController() };
    const early = stream.earlyChannel;
    stream.earlyChannel = undefined;
    if (early) {
      clearTimeout(early.timer);
      stream.channel.body = early.body;
      stream.channel.bodyLength = early.length;
      stream.channel.settle = early.settle;
    } else {
      const channel = stream.channel;
      channel.timer = setTimeout(() => {
        if (!stream.closed && !channel.body)
          this.reset(stream, ResetCode.protocolError, `the announced body channel did not arrive within ${this.channelWaitMs() / 1000} s`);
      }, this.channelWaitMs());
    }
    this.heads.add(stream);
  }

  /** Pipes the agent's POST body into the public client's response; the stream ends with it. */
  private async pipeChannel(stream: EdgeStream, channel: BodyChannel): Promise<void> {
    if (channel.timer !== undefined) clearTimeout(channel.timer);
    const settle = channel.settle!;
    if (channel.bodyLength !== channel.length) {
      const message = `the body channel's POST carries ${channel.bodyLength} bytes, the response head announced ${channel.length}`;
      void channel.body!.cancel().catch(() => undefined);
      channel.body = undefined;
      this.reset(stream, ResetCode.protocolError, message);
      settle({ ok: false, status: 409, message });
      return;
    }
    try {
      await channel.body!.pipeTo(channel.writable!, { signal: channel.stop.signal });
    } catch (error) {
      const message = channel.stop.signal.aborted ? String(channel.stop.signal.reason) : `the response body broke off: ${(error as Error).message}`;
      if (!stream.closed) this.reset(stream, ResetCode.cancelled, message);
      settle({ ok: false, status: 409, message });
      return;
    }
    if (!stream.closed) this.finish(stream);
    settle({ ok: true });
  }

  private answer(stream: EdgeStream): void {
    const head = stream.head;
    if (stream.closed || stream.answered || !head) return;
    stream.answered = true;
    stream.head = undefined;
    const headers = new Headers();
    for (const [name, value] of head.headers) {
      if (HOP_BY_HOP_HEADERS.has(name.toLowerCase())) continue;
      try {
        headers.append(name, value);
      } catch {
        // a header the runtime refuses (invalid characters) is dropped rather than failing the response
      }
    }
    if (head.status === 101) {
      this.finish(stream);
      stream.answer(this.options.acceptWebSocket(stream.id, stream.request, headers));
      return;
    }
    const init = { status: head.status, statusText: head.status_text, headers, encodeBody: "manual" as const };
    if (NULL_BODY_STATUSES.has(head.status) || stream.request.method.toUpperCase() === "HEAD") {
      stream.answer(new Response(null, init));
      if (stream.ended) this.finish(stream);
      return;
    }
    if (stream.ended) {
      // The whole response came in one message: no stream needed.
      const body = concat(stream.early);
      headers.set("content-length", String(body.byteLength));
      stream.answer(new Response(body, init));
      this.finish(stream);
      return;
    }
    const channel = stream.channel;
    if (channel) {
      const pipe = new FixedLengthStream(channel.length);
      headers.delete("content-length");
      channel.writable = pipe.writable;
      stream.answer(new Response(pipe.readable, init));
      if (channel.body) void this.pipeChannel(stream, channel);
      return;
    }
    const length = parseContentLength(headers.get("content-length"));
    const pipe = length === undefined ? new IdentityTransformStream() : new FixedLengthStream(length);
    if (length !== undefined) headers.delete("content-length");
    stream.writer = pipe.writable.getWriter();
    stream.answer(new Response(pipe.readable, init));
    const early = stream.early;
    stream.early = [];
    for (const bytes of early) this.writeResponseBody(stream, bytes);
  }

  private writeResponseBody(stream: EdgeStream, bytes: Uint8Array): void {
    if (!stream.answered) {
      stream.early.push(bytes);
      return;
    }
    const writer = stream.writer;
    if (!writer) return this.reset(stream, ResetCode.protocolError, "a body for a response that has none");
    if (stream.closed) return;
    // Writes are queued, not chained: the next chunk is on its way while the client takes this one. Each is
    // acknowledged once the client took it, so what waits here is still at most the window.
    writer.write(bytes).then(
      () => {
        const window = stream.core.receive.acknowledge(bytes.byteLength);
        if (window && !stream.closed) this.options.send(window);
      },
      () => this.reset(stream, ResetCode.cancelled, "the public client went away"),
    );
  }

  private endResponseBody(stream: EdgeStream): void {
    stream.ended = true;
    if (!stream.answered) return; // answered, whole, at the end of this message
    if (stream.closed) return;
    const writer = stream.writer;
    if (!writer) return this.finish(stream); // a response without a body (HEAD, 204, 304)
    // close() is queued behind the writes: it resolves once the client has taken the whole body.
    this.finish(stream, true);
    this.draining.add(stream);
    const drained = () => {
      this.draining.delete(stream);
      this.budget.release(stream);
    };
    void writer.close().then(drained, drained);
  }

  /** The edge ends a stream: tells the agent, then fails it locally. */
  private reset(stream: EdgeStream, code: string, message: string): void {
    if (stream.closed) return;
    this.options.send(stream.core.reset({ code, message }));
    this.fail(stream, { code, message });
  }

  /** Ends a stream locally (the agent reset it, or its connection is gone). */
  private fail(stream: EdgeStream, failure: StreamFailure): void {
    if (stream.closed) return;
    this.finish(stream);
    if (!stream.answered) {
      stream.answered = true;
      stream.answer(this.options.failureResponse(failure, stream.request.host));
    } else {
      void stream.writer?.abort(new Error(failure.message)).catch(() => undefined);
    }
    const channel = stream.channel;
    if (channel) {
      if (channel.timer !== undefined) clearTimeout(channel.timer);
      if (channel.body && channel.writable) channel.stop.abort(failure.message);
      else {
        void channel.writable?.abort(new Error(failure.message)).catch(() => undefined);
        void channel.body?.cancel().catch(() => undefined);
        channel.settle?.({ ok: false, status: 409, message: failure.message });
      }
    }
    const early = stream.earlyChannel;
    if (early) {
      stream.earlyChannel = undefined;
      clearTimeout(early.timer);
      void early.body.cancel().catch(() => undefined);
      early.settle({ ok: false, status: 409, message: failure.message });
    }
  }

  /** Ends a stream's exchange with the agent; a `draining` one keeps its boost until its client has the body. */
  private finish(stream: EdgeStream, draining = false): void {
    stream.closed = true;
    this.streams.delete(stream.id);
    this.heads.delete(stream);
    this.bodies.delete(stream);
    if (!draining) this.budget.release(stream);
    stream.wake();
    void stream.requestReader?.cancel().catch(() => undefined);
  }
}

/**
 * Reads a request body a frame's worth (`size`) at a time where the runtime allows it: a byte stream read into a
 * buffer of that size hands over what has arrived, up to that, where its default reader hands over the
 * runtime's own small pieces (4 KiB each for a request body in workerd: a 10 MiB upload became ~2,600 data
 * frames and messages, and bench:tunnel's uploads ran at ~0.05 × the origin route). Each read gets a fresh
 * buffer: a data frame sent uncopied may still be held by the runtime after `WebSocket.send` returns (reading
 * into two buffers in turn corrupted concurrent uploads in test/e2e/inspect.e2e.test.ts). A byte stream is read
 * DATA_FRAME_HEADROOM bytes into its buffer (`headroom`), so its data frame is encoded there and sent
 * uncopied: copying each 64 KiB into a message was ~20 % of workerd's time in bench:tunnel-profile's uploads.
 */
function bodyReader(
  body: ReadableStream<Uint8Array>,
  size: number,
): {
  reader: ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>;
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  headroom: boolean;
} {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // not a byte stream (a stream made in JavaScript): its chunks come as they were enqueued
  }
  if (byob) {
    const reader = byob;
    const read = () => reader.read(new Uint8Array(DATA_FRAME_HEADROOM + size).subarray(DATA_FRAME_HEADROOM)) as Promise<ReadableStreamReadResult<Uint8Array>>;
    return { reader, read, headroom: true };
  }
  const reader = body.getReader();
  return { reader, read: () => reader.read(), headroom: false };
}

function refuse(body: ReadableStream<Uint8Array>, status: number, message: string): Promise<BodyChannelOutcome> {
  void body.cancel().catch(() => undefined);
  return Promise.resolve({ ok: false, status, message });
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
