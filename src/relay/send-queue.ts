/**
 * A body waiting for the peer's window (the agent's response bodies): bytes are queued as they arrive and go
 * out in data frames as large as the peer takes, when the window allows; the end frame follows the last.
 */

import { DATA_FRAME_HEADROOM } from "./frame-codec.ts";
import type { FrameOf } from "./frames.ts";
import type { SendHalf } from "./stream-core.ts";

export class SendQueue {
  private chunks: Uint8Array[] = [];
  private bytes = 0;
  private finished = false;
  private endSent = false;

  /** `allocate` makes a frame's buffer (uninitialised memory will do: every byte is written). */
  constructor(
    private readonly half: SendHalf,
    private readonly allocate: (size: number) => Uint8Array = (size) => new Uint8Array(size),
  ) {}

  /** Bytes queued and not yet sent. */
  get waiting(): number {
    return this.bytes;
  }

  /** All of the body has been queued. */
  get done(): boolean {
    return this.finished;
  }

  push(chunk: Uint8Array): void {
    this.chunks.push(chunk);
    this.bytes += chunk.byteLength;
  }

  /** No more bytes will come: the end goes once what is queued has been sent. */
  finish(): void {
    this.finished = true;
  }

  /**
   * The data frames the window allows now, each already counted as sent, each body copied once into a buffer
   * with DATA_FRAME_HEADROOM free before it (for encodeDataInPlace). A window down to a sliver waits for the
   * peer's acknowledgement, which it sends once this end could be stuck.
   */
  *frames(largest: number): Generator<FrameOf<"data">> {
    while (this.bytes > 0) {
      const size = this.half.nextFrameSize(this.bytes, largest);
      if (size === 0) return;
      const frame = this.half.frame(this.take(size));
      this.half.sent(frame);
      yield frame;
    }
  }

  /** The end frame, once: when the body is done and all of it has been sent. */
  end(): FrameOf<"end"> | undefined {
    if (this.bytes > 0 || !this.finished || this.endSent) return undefined;
    this.endSent = true;
    return this.half.end();
  }

  /** Drops what waits (the stream is gone). */
  clear(): void {
    this.chunks = [];
    this.bytes = 0;
  }

  private take(size: number): Uint8Array {
    const buffer = this.allocate(DATA_FRAME_HEADROOM + size);
    let offset = DATA_FRAME_HEADROOM;
    while (offset < buffer.byteLength) {
      const chunk = this.chunks[0];
      const part = Math.min(chunk.byteLength, buffer.byteLength - offset);
      buffer.set(part === chunk.byteLength ? chunk : chunk.subarray(0, part), offset);
      offset += part;
      if (part === chunk.byteLength) this.chunks.shift();
      else this.chunks[0] = chunk.subarray(part);
    }
    this.bytes -= size;
    return buffer.subarray(DATA_FRAME_HEADROOM);
  }
}
