/**
 * The per-stream state machine both ends of the relay share (the edge's EdgeStreams and the agent's
 * LocalForwarder): sending a body within the window the peer gave, receiving one in order while holding the
 * peer to the window this end gave, acknowledging what was passed on, and the end. Pure: plain values in,
 * frames and verdicts out; no I/O, no timers, no Workers or Node APIs.
 */

import { DataSequence, OrderedReceiver, type OrderedSink } from "./framing.ts";
import type { FrameOf } from "./frames.ts";
import { INITIAL_STREAM_WINDOW, MAX_DATA_CHUNK, MAX_RESET_MESSAGE, ResetCode } from "./protocol.ts";

/**
 * Largest window a sender may hold. Increments only ever return bytes the receiver was sent, so a window
 * past this means a peer granting bytes it was never owed.
 */
export const MAX_STREAM_WINDOW = 2 ** 31;

/** Why a stream must be reset: the peer broke the protocol on it. */
export interface StreamViolation {
  readonly code: typeof ResetCode.protocolError;
  readonly message: string;
}

const violation = (message: string): StreamViolation => ({ code: ResetCode.protocolError, message });

/** One direction's sending side: numbers data frames and spends the window the peer granted. */
export class SendHalf {
  private window: number;
  private readonly sequence: DataSequence;

  constructor(stream: number, window: number = INITIAL_STREAM_WINDOW) {
    this.sequence = new DataSequence(stream);
    this.window = window;
  }

  /** Bytes that may be sent now. */
  get available(): number {
    return this.window;
  }

  /**
   * Bytes of the next data frame when `waiting` bytes wait to be sent in frames of up to `largest`: as much as
   * the window takes, or 0 (wait for the peer) while it takes less than a frame's worth (MAX_DATA_CHUNK, or all
   * that waits). The receiver acknowledges before its window could stay that small, so waiting never sticks.
   */
  nextFrameSize(waiting: number, largest: number): number {
    if (this.window < Math.min(waiting, MAX_DATA_CHUNK)) return 0;
    return Math.min(waiting, largest, this.window);
  }

  /** One data frame of `bytes`, sized by the caller to what the peer takes; send it only once `fits` allows. */
  frame(bytes: Uint8Array): FrameOf<"data"> {
    return this.sequence.frame(bytes);
  }

  fits(frame: FrameOf<"data">): boolean {
    return frame.bytes.byteLength <= this.window;
  }

  /** Records a frame as sent. Sending one that does not fit is a bug of this end, not of the peer. */
  sent(frame: FrameOf<"data">): void {
    if (!this.fits(frame)) throw new RangeError(`data frame of ${frame.bytes.byteLength} bytes does not fit the window of ${this.window}`);
    this.window -= frame.bytes.byteLength;
  }

  /** The peer passed bytes on: they may be sent again. */
  grant(increment: number): StreamViolation | undefined {
    if (this.window + increment > MAX_STREAM_WINDOW) return violation(`window increment of ${increment} grows the window past ${MAX_STREAM_WINDOW} bytes`);
    this.window += increment;
    return undefined;
  }

  /** The end frame: how many data frames went out. */
  end(): FrameOf<"end"> {
    return this.sequence.end();
  }
}

/**
 * One direction's receiving side: puts the body back in order, holds the peer to the window this end
 * gave (a data frame past it is a protocol error), and says what to acknowledge as bytes are passed on.
 *
 * Acknowledgements are batched: bytes passed on are given back once they reach a quarter of the window,
 * or at once when the peer may be unable to send its next frame (nothing left to pass on here, and less
 * than a frame's worth of window left on its side), so a stream never waits on an acknowledgement held back.
 */
export class ReceiveHalf {
  private readonly order: OrderedReceiver;
  private window: number;
  /** Bytes received and not yet passed on. */
  private outstanding = 0;
  /** Bytes passed on and not yet given back to the peer. */
  private unacknowledged = 0;
  /** The peer's end arrived (data frames may still be on their way: delivery order is not relied on). */
  private endSeen = false;

  constructor(
    private readonly stream: number,
    sink: OrderedSink,
    { headFirst, window = INITIAL_STREAM_WINDOW }: { headFirst: boolean; window?: number },
  ) {
    this.order = new OrderedReceiver(sink, { headFirst });
    this.window = window;
  }

  /** The window this end gives the peer: what it may have in flight, unacknowledged. */
  get size(): number {
    return this.window;
  }

  /** The head arrived: the body that waited for it may go (for a receiver made with `headFirst`). */
  open(): void {
    this.order.open();
  }

  data(frame: FrameOf<"data">): StreamViolation | undefined {
    this.outstanding += frame.bytes.byteLength;
    if (this.outstanding + this.unacknowledged > this.window)
      return violation(`data frame ${frame.seq} goes past the flow-control window of ${this.window} bytes`);
    if (!this.order.data(frame.seq, frame.bytes)) return violation(`data frame ${frame.seq} repeated or past the end`);
    return undefined;
  }

  end(frame: FrameOf<"end">): StreamViolation | undefined {
    if (!this.order.end(frame.count)) return violation(`end after ${frame.count} data frames contradicts the frames sent`);
    this.endSeen = true;
    return undefined;
  }

  /**
   * This end lets the peer have `extra` more bytes in flight from now on: the window frame that says so, or
   * undefined when there is nothing to give (the peer has sent its end).
   */
  enlarge(extra: number): FrameOf<"window"> | undefined {
    if (this.endSeen || extra <= 0) return undefined;
    this.window += extra;
    return { type: "window", stream: this.stream, increment: extra };
  }

  /**
   * `bytes` of the body were passed on (written to the client or the local socket): the window frame that
   * gives them back, or undefined when it is not yet worth one (see the class comment) or there is nothing
   * to give (the peer has sent its end).
   */
  acknowledge(bytes: number): FrameOf<"window"> | undefined {
    this.outstanding -= bytes;
    this.unacknowledged += bytes;
    if (this.endSeen || this.unacknowledged <= 0) return undefined;
    const peerMayBeStuck = this.outstanding <= 0 && this.window - this.unacknowledged < MAX_DATA_CHUNK;
    if (this.unacknowledged < this.window / 4 && !peerMayBeStuck) return undefined;
    const increment = this.unacknowledged;
    this.unacknowledged = 0;
    return { type: "window", stream: this.stream, increment };
  }
}

/** Both directions of one stream, as seen from one end. */
export class StreamCore {
  readonly send: SendHalf;
  readonly receive: ReceiveHalf;

  constructor(
    readonly id: number,
    sink: OrderedSink,
    options: { headFirst: boolean; receiveWindow?: number; sendWindow?: number },
  ) {
    this.send = new SendHalf(id, options.sendWindow);
    this.receive = new ReceiveHalf(id, sink, { headFirst: options.headFirst, window: options.receiveWindow });
  }

  /** Applies a flow frame from the peer; a violation means the stream must be reset with it. */
  onFrame(frame: FrameOf<"data"> | FrameOf<"end"> | FrameOf<"window">): StreamViolation | undefined {
    switch (frame.type) {
      case "data":
        return this.receive.data(frame);
      case "end":
        return this.receive.end(frame);
      case "window":
        return this.send.grant(frame.increment);
    }
  }

  /** The reset frame; a message past the protocol's MAX_RESET_MESSAGE is cut (the peer would refuse the frame and end the session). */
  reset(failure: { code: string; message: string }): FrameOf<"reset"> {
    return { type: "reset", stream: this.id, code: failure.code, message: failure.message.slice(0, MAX_RESET_MESSAGE) };
  }
}
