/**
 * A request body an inbound action may read (verify-webhook) and the upstream still receives whole. It is
 * read at most once and only up to a bound; what was read is kept and sent on in place of the original
 * stream, so the upstream gets the same bytes whether or not an action looked at them. With an allowance, the
 * bytes are the isolate's body budget's while they are read (src/policy/body-budget.ts).
 */

import { joinChunks, nextChunk } from "../bounded-read.ts";
import { type ErrorDetails, ServiceError } from "../errors.ts";
import type { BodyAllowance, BodyBudgetLimits, BodyHold } from "./body-budget.ts";

/**
 * Bytes of a body an action may read into memory. Webhooks are small (Stripe's and Slack's kilobytes, GitHub's
 * rarely past a few hundred KB); docs/security.md has the figure and what happens above it.
 */
export const MAX_READ_BODY_BYTES = 1024 * 1024;

/** Bytes of memory of their own (WebCrypto takes nothing else). */
export type BodyBytes = Uint8Array<ArrayBuffer>;

/**
 * A read's outcome. `busy`: the isolate holds as many bodies as its budget lets it, so this one was not read (or
 * not read on): worth sending again in `retryAfter` seconds, unlike a body that broke off.
 */
export type BodyRead =
  | { readonly ok: true; readonly bytes: BodyBytes }
  | { readonly ok: false; readonly tooLarge: true; readonly busy?: false; readonly limit: number }
  | { readonly ok: false; readonly tooLarge: false; readonly busy: true; readonly retryAfter: number; readonly message: string }
  | { readonly ok: false; readonly tooLarge: false; readonly busy?: false; readonly message: string };

/** A read the budget refused. */
export type BusyRead = Extract<BodyRead, { busy: true }>;

/**
 * The 503 a refused read answers, whatever the action's `enforce`: the request was not judged, so it must not
 * pass as unverified, and sent again a moment later it will be. `code`: the action's own error code.
 */
export function busyResponse(read: BusyRead, code: number, details: ErrorDetails): Response {
  const message = `The request body could not be read: ${read.message}.`;
  return new ServiceError(503, code, message, {
    details: { ...details, retry_after: read.retryAfter },
    headers: { "retry-after": String(read.retryAfter) },
  }).toResponse();
}

const EMPTY: BodyBytes = new Uint8Array(0);

export class RequestBody {
  private read_: Promise<BodyRead> | undefined;
  /** The budget's hold on the bytes read, kept while they wait for the upstream (released by `release`). */
  private kept: BodyHold | undefined;
  /** Set once reading began: what the upstream gets instead of the original stream. */
  private replacement: Uint8Array | ReadableStream<Uint8Array> | null | undefined;

  /**
   * `declaredLength`: the content-length header, which lets a body known to be too large go unread (and one
   * within the bound take its bytes of the budget up front). `allowance`: the budget the read holds its bytes
   * of, under its party; without one (tools, tests) nothing bounds how many are read at once.
   */
  constructor(
    private readonly source: ReadableStream<Uint8Array> | null,
    private readonly declaredLength: string | null = null,
    readonly limit: number = MAX_READ_BODY_BYTES,
    private readonly allowance?: BodyAllowance,
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

  /**
   * Gives the bytes read back to the budget: the pipeline calls it once the upstream has answered (it has taken
   * the body) or the request was answered without it. Until then they are held in memory, so they stay counted;
   * a request whose code never gets here leaves a hold the budget's sweep takes back (body-budget.ts).
   */
  release(): void {
    this.kept?.release();
    this.kept = undefined;
  }

  private async readOnce(): Promise<BodyRead> {
    if (this.source === null) {
      this.replacement = null;
      return { ok: true, bytes: EMPTY };
    }
    const declared = Number(this.declaredLength ?? Number.NaN);
    if (declared > this.limit) return { ok: false, tooLarge: true, limit: this.limit };
    const hold = this.allowance?.budget.hold(this.allowance.party, this.allowance.client);
    const limits = this.allowance?.budget.limits;
    // Taken before a byte is read when the length is declared: a body that cannot be held is not begun.
    if (hold && limits && declared > 0 && !hold.cover(declared)) return this.busy(hold, limits);
    const reader = this.source.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await nextChunk(reader, limits?.readIdleMs);
        if (done) {
          this.kept = hold;
          break;
        }
        chunks.push(value);
        size += value.byteLength;
        if (size > this.limit) {
          this.replacement = prefixThenRest(chunks, reader);
          this.kept = hold;
          return { ok: false, tooLarge: true, limit: this.limit };
        }
        if (hold && limits && !hold.cover(size)) {
          void reader.cancel().catch(() => {});
          return this.busy(hold, limits);
        }
      }
    } catch (error) {
      // The client went away mid-body (or went silent): nothing whole is left to send on, and the request is
      // over anyway (an empty body, not none: a request whose body was taken cannot be sent on without one).
      this.replacement = EMPTY;
      void reader.cancel().catch(() => {});
      return { ok: false, tooLarge: false, message: `the request body could not be read: ${(error as Error).message}` };
    } finally {
      // A read that ended without bytes to send on gives them back now; bytes read are kept until release().
      if (this.kept !== hold) hold?.release();
    }
    // A stream's chunks are never views of shared memory.
    const bytes = chunks.length === 1 ? (chunks[0] as BodyBytes) : joinChunks(chunks, size);
    this.replacement = bytes;
    return { ok: true, bytes };
  }

  private busy(hold: BodyHold, limits: BodyBudgetLimits): BodyRead {
    hold.release();
    // Nothing whole can be sent on: the request is answered 503.
    this.replacement = EMPTY;
    const retryAfter = limits.retryAfterSeconds;
    return {
      ok: false,
      tooLarge: false,
      busy: true,
      retryAfter,
      message: `the gateway holds as many request bodies as it may (${limits.clientBytes} bytes per client, ${limits.partyBytes} per owner, ${limits.totalBytes} in all); send it again in ${retryAfter} s`,
    };
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
