/**
 * The streams of one end of the relay, whatever its runtime: the edge's EdgeStreams and the agent's
 * LocalForwarder each keep theirs in a StreamTable and add only their own I/O. The table knows which streams
 * are open, applies the peer's flow frames to them (a broken rule resets the stream), offers a larger window
 * to a stream whose body did not end in the message that started it (window-budget.ts), and ends streams:
 * `reset` tells the peer, `close` does not. The adapter hears of every stream that ends through `closed`.
 */

import type { Frame, FrameOf } from "./frames.ts";
import type { OrderedSink } from "./framing.ts";
import { StreamCore } from "./stream-core.ts";
import type { WindowBudget } from "./window-budget.ts";

/** Why a stream ended early: a reset's code and message. */
export interface StreamFailure {
  readonly code: string;
  readonly message: string;
}

/** What every end keeps per stream; an adapter extends it with its I/O. */
export class RelayStream {
  closed = false;
  /** Extra receive window taken from the session's budget (see window-budget.ts). */
  boost = 0;
  boostAsked = false;
  /** Body out (within the peer's window), body in (the peer held to ours). */
  readonly core: StreamCore;
  private windowWaiters: Array<() => void> = [];

  constructor(
    readonly id: number,
    sink: OrderedSink,
    options: { headFirst: boolean; receiveWindow?: number },
  ) {
    this.core = new StreamCore(id, sink, options);
  }

  /** Resolves when the send window grows or the stream closes. */
  windowChanged(): Promise<void> {
    return new Promise((resolve) => this.windowWaiters.push(resolve));
  }

  /** Wakes whatever waits in windowChanged. */
  wake(): void {
    const waiters = this.windowWaiters;
    this.windowWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * Sends `chunk` in data frames of up to `largest` bytes as the peer's window allows, waiting for the window
   * while it is shut. `emit` gets each frame, already counted as sent. False when the stream closed first.
   */
  async sendChunk(chunk: Uint8Array, largest: number, emit: (frame: FrameOf<"data">, offset: number) => void): Promise<boolean> {
    const { send } = this.core;
    for (let offset = 0; offset < chunk.byteLength; ) {
      let size = send.nextFrameSize(chunk.byteLength - offset, largest);
      while (!this.closed && size === 0) {
        await this.windowChanged();
        size = send.nextFrameSize(chunk.byteLength - offset, largest);
      }
      if (this.closed) return false;
      const frame = send.frame(chunk.subarray(offset, offset + size));
      send.sent(frame);
      emit(frame, offset);
      offset += frame.bytes.byteLength;
    }
    return true;
  }
}

export interface StreamTableOptions<S extends RelayStream> {
  send(frame: Frame): void;
  /** The other end as a protocol error's message names it ("the agent", "the edge"). */
  readonly peer: string;
  /** Where larger windows come from; without one, a stream keeps the window it was made with. */
  readonly budget?: WindowBudget;
  /** A stream ended (close or reset): the adapter ends its I/O; `failure` says why, if it ended early. */
  closed(stream: S, failure: StreamFailure | undefined): void;
}

export class StreamTable<S extends RelayStream> {
  private readonly open = new Map<number, S>();
  /** Streams whose incoming body started in the current message: a larger window is offered at its end. */
  private readonly bodies = new Set<S>();

  constructor(private readonly options: StreamTableOptions<S>) {}

  get size(): number {
    return this.open.size;
  }

  get(id: number): S | undefined {
    return this.open.get(id);
  }

  has(id: number): boolean {
    return this.open.has(id);
  }

  add(stream: S): void {
    this.open.set(stream.id, stream);
  }

  /** The open streams, as a list that stays valid while they close. */
  list(): S[] {
    return [...this.open.values()];
  }

  /**
   * Applies a data, end or window frame from the peer. True when the stream's send window grew (a sender
   * waiting on it may go on); a frame that breaks the protocol resets the stream.
   */
  flow(stream: S, frame: FrameOf<"data"> | FrameOf<"end"> | FrameOf<"window">): boolean {
    const violation = stream.core.onFrame(frame);
    if (violation) {
      this.reset(stream, violation.code, `${this.options.peer} broke the protocol: ${violation.message}`);
      return false;
    }
    if (frame.type === "window") {
      stream.wake();
      return true;
    }
    if (frame.type === "data" && !stream.boostAsked) {
      stream.boostAsked = true;
      this.bodies.add(stream);
    }
    return false;
  }

  /** Call after the frames of one message: a body that did not end in it is a large one; let the peer send more ahead. */
  endBatch(): void {
    const { budget } = this.options;
    if (budget) {
      for (const stream of this.bodies) {
        if (stream.closed) continue;
        const window = budget.grant(stream);
        if (window) this.options.send(window);
      }
    }
    this.bodies.clear();
  }

  /** Refuses a stream this end never opened (a head it does not take). */
  refuse(id: number, failure: StreamFailure): void {
    this.options.send({ type: "reset", stream: id, code: failure.code, message: failure.message });
  }

  /** This end ends a stream early: tells the peer, then closes it. */
  reset(stream: S, code: string, message: string): void {
    if (stream.closed) return;
    this.options.send(stream.core.reset({ code, message }));
    this.close(stream, { code, message });
  }

  /**
   * Ends a stream here (done, or the peer reset it). With `keepBoost` its larger window stays taken until
   * `release`: its body is still on its way out of this end.
   */
  close(stream: S, failure?: StreamFailure, { keepBoost = false }: { keepBoost?: boolean } = {}): void {
    if (stream.closed) return;
    stream.closed = true;
    this.open.delete(stream.id);
    this.bodies.delete(stream);
    if (!keepBoost) this.release(stream);
    stream.wake();
    this.options.closed(stream, failure);
  }

  /** The boost a closed stream kept goes back to the budget. */
  release(stream: S): void {
    this.options.budget?.release(stream);
  }
}
