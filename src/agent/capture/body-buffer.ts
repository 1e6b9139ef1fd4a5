/**
 * One captured body: the first `cap` bytes, copied out of the relay's buffers (a chunk may be a view into
 * a whole WebSocket message, which must not be kept alive), and how many bytes went by in all.
 */

export class BodyBuffer {
  private chunks: Uint8Array[] = [];
  /** Bytes kept. */
  kept = 0;
  /** Bytes seen, kept or not. */
  seen = 0;

  constructor(readonly cap: number) {}

  get truncated(): boolean {
    return this.seen > this.kept;
  }

  /** Keeps what fits under the cap; answers how many bytes were kept of this chunk. */
  add(chunk: Uint8Array): number {
    this.seen += chunk.byteLength;
    const room = this.cap - this.kept;
    if (room <= 0 || chunk.byteLength === 0) return 0;
    const taken = Math.min(room, chunk.byteLength);
    // A copy with an ArrayBuffer of its own (Buffer#slice would be a view, keeping the whole source alive).
    const copy = new Uint8Array(taken);
    copy.set(chunk.subarray(0, taken));
    this.chunks.push(copy);
    this.kept += taken;
    return taken;
  }

  /** The kept bytes as one array (and from then on kept as one). */
  bytes(): Uint8Array {
    if (this.chunks.length === 1) return this.chunks[0];
    const whole = new Uint8Array(this.kept);
    let offset = 0;
    for (const chunk of this.chunks) {
      whole.set(chunk, offset);
      offset += chunk.byteLength;
    }
    this.chunks = this.kept > 0 ? [whole] : [];
    return whole;
  }

  /** Drops the bytes (the exchange was evicted while still running). */
  release(): void {
    this.chunks = [];
    this.kept = 0;
  }
}
