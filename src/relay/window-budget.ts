/**
 * How much larger than the protocol's INITIAL_STREAM_WINDOW one end lets its streams' windows grow, shared by
 * all the streams of a session: a stream carrying a body gets up to STREAM_WINDOW_BOOST more (a `window`
 * frame), as long as the session's boosts together stay within SESSION_BOOST_BUDGET, and gives it back when
 * it ends. So what one end may have to buffer for a session is at most streams × INITIAL_STREAM_WINDOW +
 * SESSION_BOOST_BUDGET, however many streams carry bodies, while one large transfer is not held to a window
 * smaller than the bytes a round trip between the ends can carry. Pure bookkeeping: no I/O, no clock.
 */

import type { FrameOf } from "./frames.ts";

/** A stream that may hold a boost: its receive window, and the boost it holds (0: none). */
export interface BoostedStream {
  boost: number;
  readonly core: { readonly receive: { enlarge(extra: number): FrameOf<"window"> | undefined } };
}

/** Extra window a stream carrying a body may get: a window of 4 MiB in all. */
export const STREAM_WINDOW_BOOST = 3.5 * 1024 * 1024;
/** Extra window the streams of one session may hold together at any time. */
export const SESSION_BOOST_BUDGET = 16 * 1024 * 1024;

export class WindowBudget {
  private used = 0;

  constructor(
    private readonly total: number = SESSION_BOOST_BUDGET,
    private readonly perStream: number = STREAM_WINDOW_BOOST,
  ) {}

  /** Bytes of boost handed out and not yet given back. */
  get inUse(): number {
    return this.used;
  }

  /** A boost for one stream: up to the per-stream boost, what the budget has left (0 when it is spent). */
  take(): number {
    const granted = Math.max(0, Math.min(this.perStream, this.total - this.used));
    this.used += granted;
    return granted;
  }

  /** A stream ended: its boost may go to another. */
  give(granted: number): void {
    this.used = Math.max(0, this.used - granted);
  }

  /** Enlarges `stream`'s window by a boost: the window frame to send, or undefined (none left, or the stream has ended). */
  grant(stream: BoostedStream): FrameOf<"window"> | undefined {
    const boost = this.take();
    const window = stream.core.receive.enlarge(boost);
    if (window) stream.boost = boost;
    else this.give(boost);
    return window;
  }

  /** `stream` ended: the boost it holds goes back to the budget. */
  release(stream: BoostedStream): void {
    this.give(stream.boost);
    stream.boost = 0;
  }
}
