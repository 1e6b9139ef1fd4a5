/** One stream of the edge's relay (EdgeStreams): the relay core's stream plus the public client's side of it. */

import type { BodyChannelRendezvous } from "../relay/body-channel-rendezvous.ts";
import type { Frame, FrameOf } from "../relay/frames.ts";
import type { HeadRefusal } from "../relay/head-bounds.ts";
import { RelayStream, type StreamFailure } from "../relay/stream-table.ts";
import type { RelayRequest } from "./relay-request.ts";

export interface EdgeStreamsOptions {
  send(frame: Frame): void;
  /** Sends a frame already encoded (a request head, sized against the bounds; a request body's data frame, encoded where it was read). */
  sendEncoded(encoded: Uint8Array): void;
  /** A stream id no live stream or socket of the session holds (see stream-ids.ts). */
  allocateId(): number;
  /** Largest data frame body the agent takes (its hello says; MAX_DATA_CHUNK for an agent that did not). */
  agentDataChunk(): number;
  /** The public client's response when a stream fails before the agent answered. */
  failureResponse(failure: StreamFailure, host: string): Response;
  /** The public client's response to a request head past the relay's bounds (head-bounds.ts): it is never sent. */
  refuseHead(refused: HeadRefusal, request: RelayRequest): Response;
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

export type Body = ReadableStream<Uint8Array>;
export type Sink = WritableStream<Uint8Array>;

export class EdgeStream extends RelayStream {
  answered = false;
  /** The agent's response head, until the stream is answered at the end of the message that carried it. */
  head: FrameOf<"response_head"> | undefined;
  /** Body bytes that arrived before the answer. */
  early: Uint8Array[] = [];
  /** The agent's end arrived (after all its data). */
  ended = false;
  writer?: WritableStreamDefaultWriter<Uint8Array>;
  requestReader?: ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>;
  channel!: BodyChannelRendezvous<Body, Sink>;
  /** The body length a channel announced. */
  channelLength = 0;

  constructor(
    id: number,
    readonly request: RelayRequest,
    readonly answer: (response: Response) => void,
    body: { write(stream: EdgeStream, bytes: Uint8Array): void; end(stream: EdgeStream): void },
  ) {
    super(id, { data: (bytes) => body.write(this, bytes), end: () => body.end(this) }, { headFirst: true });
  }
}
