/**
 * How frames travel, for both ends: data frames numbered per stream (DataSequence), a stream's body put
 * back in order on receipt (OrderedReceiver), and frames of one turn batched into one message (FrameOutbox).
 */

import { binaryFrameSize, encodeFrame, writeBinaryFrame } from "./frame-codec.ts";
import { isBinaryFrame, type BinaryFrame, type Frame, type FrameOf } from "./frames.ts";
import { MAX_DATA_CHUNK, MAX_MESSAGE_BYTES } from "./protocol.ts";

/** Numbers the data frames of one stream direction and splits chunks to MAX_DATA_CHUNK. */
export class DataSequence {
  private sent = 0;

  constructor(private readonly stream: number) {}

  *frames(chunk: Uint8Array): Generator<FrameOf<"data">> {
    for (let offset = 0; offset < chunk.byteLength; offset += MAX_DATA_CHUNK) {
      yield { type: "data", stream: this.stream, seq: this.sent++, bytes: chunk.subarray(offset, Math.min(offset + MAX_DATA_CHUNK, chunk.byteLength)) };
    }
  }

  /** One data frame of `bytes`, whatever their size (the caller keeps to the size the peer takes). */
  frame(bytes: Uint8Array): FrameOf<"data"> {
    return { type: "data", stream: this.stream, seq: this.sent++, bytes };
  }

  end(): FrameOf<"end"> {
    return { type: "end", stream: this.stream, count: this.sent };
  }
}

export interface OrderedSink {
  data(bytes: Uint8Array): void;
  end(): void;
}

/**
 * Delivers one stream direction's body in order: nothing before the head has been seen (`open`), data by
 * sequence number, the end after the last data frame. Anything early waits (at most a window's worth).
 */
export class OrderedReceiver {
  private opened: boolean;
  private next = 0;
  private endAt: number | undefined;
  private ended = false;
  private readonly early = new Map<number, Uint8Array>();

  constructor(
    private readonly sink: OrderedSink,
    { headFirst }: { headFirst: boolean },
  ) {
    this.opened = !headFirst;
  }

  /** The head arrived: what waited for it may go. */
  open(): void {
    this.opened = true;
    this.drain();
  }

  /** False when the sequence number was already used (a protocol error). */
  data(seq: number, bytes: Uint8Array): boolean {
    if (seq < this.next || this.early.has(seq) || (this.endAt !== undefined && seq >= this.endAt)) return false;
    this.early.set(seq, bytes);
    this.drain();
    return true;
  }

  /** False when the count contradicts frames already seen. */
  end(count: number): boolean {
    if (this.endAt !== undefined || count < this.next) return false;
    for (const seq of this.early.keys()) if (seq >= count) return false;
    this.endAt = count;
    this.drain();
    return true;
  }

  private drain(): void {
    if (!this.opened || this.ended) return;
    for (let bytes = this.early.get(this.next); bytes !== undefined; bytes = this.early.get(this.next)) {
      this.early.delete(this.next);
      this.next++;
      this.sink.data(bytes);
    }
    if (this.endAt === this.next) {
      this.ended = true;
      this.sink.end();
    }
  }
}

/**
 * Collects frames sent in one turn of the event loop into as few WebSocket messages as possible: a small
 * response (head, data, end) costs the receiver one message, not three. `schedule` decides when a batch
 * goes out (queueMicrotask in a Worker, setImmediate in Node); a batch past MAX_MESSAGE_BYTES goes at once.
 * Body bytes are copied once, into the message: a data frame holds on to the bytes it was given until its
 * batch goes out, so a sender must not reuse them before then.
 */
export class FrameOutbox {
  /** Binary frames as they were given, others already encoded (JSON payloads must be encoded to be sized). */
  private parts: Array<BinaryFrame | Uint8Array> = [];
  private size = 0;
  private scheduled = false;

  constructor(
    private readonly write: (message: Uint8Array) => void,
    private readonly schedule: (flush: () => void) => void,
  ) {}

  push(frame: Frame): void {
    this.add(isBinaryFrame(frame) ? frame : encodeFrame(frame));
  }

  /**
   * A frame already encoded (encodeDataInPlace): a message of this one frame goes out as it is, uncopied.
   * The bytes must not change until the batch goes out.
   */
  pushEncoded(encoded: Uint8Array): void {
    this.add(encoded);
  }

  private add(part: BinaryFrame | Uint8Array): void {
    const bytes = part instanceof Uint8Array ? part.byteLength : binaryFrameSize(part);
    if (this.size + bytes > MAX_MESSAGE_BYTES) this.flush();
    this.parts.push(part);
    this.size += bytes;
    if (!this.scheduled) {
      this.scheduled = true;
      this.schedule(() => this.flush());
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.parts.length === 0) return;
    const parts = this.parts;
    const size = this.size;
    this.parts = [];
    this.size = 0;
    if (parts.length === 1 && parts[0] instanceof Uint8Array) return this.write(parts[0]);
    const message = new Uint8Array(size);
    let offset = 0;
    for (const part of parts) {
      if (part instanceof Uint8Array) {
        message.set(part, offset);
        offset += part.byteLength;
      } else offset = writeBinaryFrame(part, message, offset);
    }
    this.write(message);
  }
}
