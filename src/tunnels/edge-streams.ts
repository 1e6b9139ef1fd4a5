/**
 * The edge end of relayed exchanges, in workerd's streams: one stream per public request, multiplexed over the
 * agent's WebSocket. The relay core (src/relay/) keeps the streams' state; this adapter moves bodies. Request
 * bodies go out no faster than the agent's window allows; response bodies are written to the public client's
 * stream and acknowledged (a `window` frame) only once the client has taken them, so a slow client holds back
 * its own stream and nothing else. A response whose head, body and end arrive in one message (a small one) is
 * answered with the whole body at once, without a stream. A large response body may come through a body
 * channel instead (protocol.ts): the agent's own POST, piped into the client's stream.
 */

import { BodyChannelRendezvous, type BodyChannelOutcome, type ChannelIo } from "../relay/body-channel-rendezvous.ts";
import type { FrameOf, StreamFrame } from "../relay/frames.ts";
import { parseContentLength, responseHasNoBody } from "../relay/http-semantics.ts";
import { checkResponseHead } from "../relay/response-head.ts";
import { BODY_CHANNEL_MAX_BYTES, ResetCode } from "../relay/protocol.ts";
import { StreamTable, type StreamFailure } from "../relay/stream-table.ts";
import { WindowBudget } from "../relay/window-budget.ts";
import { concat, responseHeaders, sendRequestBody, workerdChannelIo } from "./edge-bodies.ts";
import { BODY_CHANNEL_ARRIVAL_MS, EdgeStream, type Body, type EdgeStreamsOptions, type Sink } from "./edge-stream.ts";
import { encodeRequestHead, type RelayRequest } from "./relay-request.ts";

// what the session object and the public side name from here
export type { StreamFailure } from "../relay/stream-table.ts";
export { clientRequestHeaders } from "./relay-request.ts";

export class EdgeStreams {
  private readonly budget = new WindowBudget();
  private readonly table: StreamTable<EdgeStream>;
  /** Streams whose head arrived in the current message: answered at its end. */
  private readonly heads = new Set<EdgeStream>();
  /**
   * Streams whose end came but whose client has not taken all the body yet: up to their window is still held
   * here, so they keep their boost and count as in flight until it is taken (stream-limits.ts).
   */
  private readonly draining = new Set<EdgeStream>();
  private readonly channelIo: ChannelIo<Body, Sink> = workerdChannelIo(() => this.options.channelWaitMs?.() ?? BODY_CHANNEL_ARRIVAL_MS);
  private readonly responseBody = {
    write: (stream: EdgeStream, bytes: Uint8Array) => this.writeResponseBody(stream, bytes),
    end: (stream: EdgeStream) => this.endResponseBody(stream),
  };

  constructor(private readonly options: EdgeStreamsOptions) {
    this.table = new StreamTable({ send: options.send, peer: "the agent", budget: this.budget, closed: (stream, failure) => this.closed(stream, failure) });
  }

  get size(): number {
    return this.table.size;
  }

  /** Streams that hold memory here: open ones, and ended ones whose client is still taking the body. */
  get inFlight(): number {
    return this.table.size + this.draining.size;
  }

  has(id: number): boolean {
    return this.table.has(id);
  }

  /**
   * Sends the request to the agent; resolves with the response once the agent's response head arrives. A head
   * the agent would refuse (head-bounds.ts), counted after the edge added its own fields, is answered here.
   */
  open(request: RelayRequest): Promise<Response> {
    const id = this.options.allocateId();
    const head = encodeRequestHead(id, request);
    if (!head.ok) {
      void request.body?.cancel().catch(() => undefined);
      return Promise.resolve(this.options.refuseHead(head, request));
    }
    let answer!: (response: Response) => void;
    const response = new Promise<Response>((resolve) => (answer = resolve));
    const stream = new EdgeStream(id, request, answer, this.responseBody);
    stream.channel = new BodyChannelRendezvous(id, this.channelIo, {
      reset: (code, message) => this.table.reset(stream, code, message),
      finished: () => this.table.close(stream),
    });
    this.table.add(stream);
    this.options.sendEncoded(head.encoded);
    if (!request.upgrade)
      void sendRequestBody(stream, this.options.agentDataChunk(), this.options, (error) =>
        this.table.reset(stream, ResetCode.cancelled, `the public client's request body broke off: ${error.message}`),
      );
    return response;
  }

  onFrame(frame: StreamFrame): void {
    const stream = this.table.get(frame.stream);
    if (!stream) return; // late frames of a stream that already ended
    switch (frame.type) {
      case "response_head":
        return this.onResponseHead(stream, frame);
      case "data":
      case "end":
      case "window":
        if (stream.channel.announced && frame.type !== "window")
          return this.table.reset(stream, ResetCode.protocolError, `a ${frame.type} frame for a body sent through a body channel`);
        this.table.flow(stream, frame);
        return;
      case "reset":
        return this.table.close(stream, { code: frame.code, message: frame.message });
      case "request_head":
        return this.table.reset(stream, ResetCode.protocolError, "request_head is sent by the edge, not the agent");
    }
  }

  /** Call after the frames of one message: answers the streams whose head arrived in it. */
  endBatch(): void {
    for (const stream of this.heads) this.answer(stream);
    this.heads.clear();
    this.table.endBatch();
  }

  /** Fails every stream of one tunnel (it stopped), telling the agent. */
  failTunnel(tunnelId: string, failure: StreamFailure): void {
    for (const stream of this.table.list()) if (stream.request.tunnelId === tunnelId) this.table.reset(stream, failure.code, failure.message);
  }

  /** Fails every stream (the agent's connection is gone). */
  failAll(failure: StreamFailure): void {
    for (const stream of this.table.list()) this.table.close(stream, failure);
  }

  /**
   * A body channel's POST for stream `id`, of `length` bytes (its content-length): its body is piped into the
   * public client's response. Resolves once the client has taken all of it, or with why not (no such stream,
   * not announced, a second POST, a length other than the head's, broke off).
   */
  attachBody(id: number, body: Body, length: number): Promise<BodyChannelOutcome> {
    const stream = this.table.get(id);
    if (!stream) {
      void body.cancel().catch(() => undefined);
      return Promise.resolve({ ok: false, status: 404, message: `stream ${id} is not open on this session` });
    }
    return stream.channel.post(body, length);
  }

  private onResponseHead(stream: EdgeStream, frame: FrameOf<"response_head">): void {
    const headSeen = stream.answered || stream.head !== undefined;
    const verdict = checkResponseHead(frame, { method: stream.request.method, upgrade: stream.request.upgrade, headSeen }, BODY_CHANNEL_MAX_BYTES);
    if (!verdict.ok) return this.table.reset(stream, verdict.code, verdict.message);
    stream.head = frame;
    stream.channel.head(verdict.channelLength);
    if (verdict.channelLength !== undefined) {
      // no data frames follow: the receiving half stays shut
      stream.channelLength = verdict.channelLength;
      this.heads.add(stream);
      return;
    }
    // A WebSocket is accepted at once: messages may follow in the same batch.
    if (frame.status === 101) return this.answer(stream);
    this.heads.add(stream);
    stream.core.receive.open();
  }

  private answer(stream: EdgeStream): void {
    const head = stream.head;
    if (stream.closed || stream.answered || !head) return;
    stream.answered = true;
    stream.head = undefined;
    const headers = responseHeaders(head.headers);
    if (head.status === 101) {
      this.table.close(stream);
      stream.answer(this.options.acceptWebSocket(stream.id, stream.request, headers));
      return;
    }
    const init = { status: head.status, statusText: head.status_text, headers, encodeBody: "manual" as const };
    if (responseHasNoBody(head.status, stream.request.method)) {
      stream.answer(new Response(null, init));
      if (stream.ended) this.table.close(stream);
      return;
    }
    if (stream.ended) {
      // The whole response came in one message: no stream needed.
      const body = concat(stream.early);
      headers.set("content-length", String(body.byteLength));
      stream.answer(new Response(body, init));
      this.table.close(stream);
      return;
    }
    if (stream.channel.announced) {
      const pipe = new FixedLengthStream(stream.channelLength);
      headers.delete("content-length");
      stream.answer(new Response(pipe.readable, init));
      stream.channel.answered(pipe.writable);
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
    if (!writer) return this.table.reset(stream, ResetCode.protocolError, "a body for a response that has none");
    if (stream.closed) return;
    // Writes are queued, not chained: the next chunk is on its way while the client takes this one. Each is
    // acknowledged once the client took it, so what waits here is still at most the window.
    writer.write(bytes).then(
      () => {
        const window = stream.core.receive.acknowledge(bytes.byteLength);
        if (window && !stream.closed) this.options.send(window);
      },
      () => this.table.reset(stream, ResetCode.cancelled, "the public client went away"),
    );
  }

  private endResponseBody(stream: EdgeStream): void {
    stream.ended = true;
    if (!stream.answered) return; // answered, whole, at the end of this message
    if (stream.closed) return;
    const writer = stream.writer;
    if (!writer) return this.table.close(stream); // a response without a body (HEAD, 204, 304)
    // close() is queued behind the writes: it resolves once the client has taken the whole body.
    this.table.close(stream, undefined, { keepBoost: true });
    this.draining.add(stream);
    const drained = () => {
      this.draining.delete(stream);
      this.table.release(stream);
    };
    void writer.close().then(drained, drained);
  }

  /** A stream ended (StreamTable): its request body stops; one that failed fails its client and its body channel. */
  private closed(stream: EdgeStream, failure: StreamFailure | undefined): void {
    this.heads.delete(stream);
    void stream.requestReader?.cancel().catch(() => undefined);
    if (!failure) return;
    if (!stream.answered) {
      stream.answered = true;
      stream.answer(this.options.failureResponse(failure, stream.request.host));
    } else {
      void stream.writer?.abort(new Error(failure.message)).catch(() => undefined);
    }
    stream.channel.fail(failure.message);
  }
}
