/**
 * One captured body: the first `cap` bytes, copied out of the relay's buffers (a chunk may be a view into
 * a whole WebSocket message, which must not be kept alive), and how many bytes went by in all.
 *
 * Chunks are copied into blocks that grow with the body (each as large as all before it, from
 * MIN_BLOCK_BYTES up to MAX_BLOCK_BYTES), so a body sent a byte at a time costs no more than one sent
 * whole; once the body is complete, `seal` keeps exactly its bytes, as one array.
 */

import { TYPED_ARRAY_BYTES } from "./retained-size.ts";

export const MIN_BLOCK_BYTES = 1024;
export const MAX_BLOCK_BYTES = 64 * 1024;
/** The buffer object and its list of blocks, empty. */
const BODY_BUFFER_BYTES = 96;
/** A block's slot in the list. */
const BLOCK_SLOT_BYTES = 8;

export class BodyBuffer {
  private blocks: Uint8Array[] = [];
  /** Bytes allocated, kept or room for more. */
  private capacity = 0;
  /** Bytes kept. */
  kept = 0;
  /** Bytes seen, kept or not. */
  seen = 0;

  constructor(readonly cap: number) {}

  get truncated(): boolean {
    return this.seen > this.kept;
  }

  /** What the buffer holds in memory: its blocks, full or not, and each block's own cost. */
  get retainedBytes(): number {
    return BODY_BUFFER_BYTES + this.capacity + this.blocks.length * (TYPED_ARRAY_BYTES + BLOCK_SLOT_BYTES);
  }

  /** Keeps what fits under the cap. */
  add(chunk: Uint8Array): void {
    this.seen += chunk.byteLength;
    let from = 0;
    while (from < chunk.byteLength && this.kept < this.cap) {
      if (this.kept === this.capacity) this.grow();
      const block = this.blocks[this.blocks.length - 1];
      const at = block.byteLength - (this.capacity - this.kept);
      const taken = Math.min(block.byteLength - at, chunk.byteLength - from);
      block.set(chunk.subarray(from, from + taken), at);
      from += taken;
      this.kept += taken;
    }
  }

  private grow(): void {
    const size = Math.min(this.cap - this.capacity, Math.max(MIN_BLOCK_BYTES, Math.min(this.capacity, MAX_BLOCK_BYTES)));
    this.blocks.push(new Uint8Array(size));
    this.capacity += size;
  }

  /** The kept bytes as one array (a copy while the body is not sealed, or spread over blocks). */
  bytes(): Uint8Array {
    if (this.blocks.length === 1 && this.capacity === this.kept) return this.blocks[0];
    const whole = new Uint8Array(this.kept);
    let offset = 0;
    for (const block of this.blocks) {
      const taken = Math.min(block.byteLength, this.kept - offset);
      whole.set(block.subarray(0, taken), offset);
      offset += taken;
    }
    return whole;
  }

  /** The body is complete: from now on it keeps exactly its bytes, in one array. */
  seal(): void {
    if (this.blocks.length === 1 && this.capacity === this.kept) return;
    const whole = this.bytes();
    this.blocks = this.kept > 0 ? [whole] : [];
    this.capacity = this.kept;
  }

  /** Drops the bytes (the exchange was evicted while still running). */
  release(): void {
    this.blocks = [];
    this.capacity = 0;
    this.kept = 0;
  }
}
