/**
 * A request body an inbound action may read (verify-webhook) and the upstream still receives whole. It is
 * read at most once and only up to a bound; what was read is kept and sent on in place of the original
 * stream, so the upstream gets the same bytes whether or not an action looked at them.
 */

import { joinChunks } from "../bounded-read.ts";

/**
 * Bytes of a body an action may read into memory. Webhooks are small (Stripe's and Slack's kilobytes, GitHub's
 * rarely past a few hundred KB); docs/security.md has the figure and what happens above it.
 */
export const MAX_READ_BODY_BYTES = 1024 * 1024;

/** Bytes of memory of their own (WebCrypto takes nothing else). */
export type BodyBytes = Uint8Array<ArrayBuffer>;

export type BodyRead =
  | { readonly ok: true; readonly bytes: BodyBytes }
  | { readonly ok: false; readonly tooLarge: true; readonly limit: number }
  | { readonly ok: false; readonly tooLarge: false; readonly message: string };

const EMPTY: BodyBytes = new Uint8Array(0);

export class RequestBody {
  private read_: Promise<BodyRead> | undefined;
  /** Set once reading began: what the upstream gets instead of the original stream. */
  private replacement: Uint8Array | ReadableStream<Uint8Array> | null | undefined;

  /** `declaredLength`: the content-length header, which lets a body known to be too large go unread. */
  constructor(
    private readonly source: ReadableStream<Uint8Array> | null,
    private readonly declaredLength: string | null = null,
    readonly limit: number = MAX_READ_BODY_BYTES,
  ) {}

  /** The whole body, or why not; the same answer for every caller. */
  read(): Promise<BodyRead> {
    return (this.read_ ??= this.readOnce());
  }

  /**
   * What to send upstream in place of the original body: undefined when nothing was read (send the original),
   * else the bytes read, or — for a body past the bound — the part read followed by the rest, unread.
   */
  forwardBody(): Uint8Array | ReadableStream<Uint8Array> | null | undefined {
    return this.replacement;
  }

  private async readOnce(): Promise<BodyRead> {
    if (this.source === null) {
      this.replacement = null;
      return { ok: true, bytes: EMPTY };
    }
    const declared = Number(this.declaredLength ?? Number.NaN);
    if (declared > this.limit) return { ok: false, tooLarge: true, limit: this.limit };
    const reader = this.source.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        size += value.byteLength;
        if (size > this.limit) {
          this.replacement = prefixThenRest(chunks, reader);
          return { ok: false, tooLarge: true, limit: this.limit };
        }
      }
    } catch (error) {
      // The client went away mid-body: nothing whole is left to send on, and the request is over anyway
      // (an empty body, not none: a request whose body was taken cannot be sent on without one).
      this.replacement = EMPTY;
      return { ok: false, tooLarge: false, message: `the request body could not be read: ${(error as Error).message}` };
    }
    // A stream's chunks are never views of shared memory.
    const bytes = chunks.length === 1 ? (chunks[0] as BodyBytes) : joinChunks(chunks, size);
    this.replacement = bytes;
    return { ok: true, bytes };
  }
}

/** The chunks already read, then whatever `reader` still has, as one stream pulled on demand. */
function prefixThenRest(chunks: Uint8Array[], reader: ReadableStreamDefaultReader<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = chunks.shift();
      if (next) return controller.enqueue(next);
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
