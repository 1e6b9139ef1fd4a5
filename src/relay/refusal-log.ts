/**
 * Logs what one end of the relay refused (a request head past the bounds, a frame it could not decode) without
 * turning hostile traffic into a log flood: the first refusal is written at once, later ones are counted and
 * written as one line, with the count and the last reason, once REFUSAL_LOG_INTERVAL_MS has passed since the
 * previous line. Pure: the clock and the writer are injected; one instance per session, at either end.
 */

/** Least time between two lines of one log. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;
/** Characters of the reason in a line (reasons may quote a client's header name). */
export const MAX_REFUSAL_REASON_CHARS = 256;

export interface RefusalLogOptions {
  /** What was refused, plural, as the line says it: "request heads past the relay's bounds answered at the edge". */
  readonly what: string;
  readonly now?: () => number;
  readonly write?: (line: string) => void;
}

export class RefusalLog {
  private readonly what: string;
  private readonly now: () => number;
  private readonly write: (line: string) => void;
  private lastLineAt = Number.NEGATIVE_INFINITY;
  /** Refusals since the last line. */
  private count = 0;
  private last = "";

  constructor({ what, now = Date.now, write = (line) => console.warn(line) }: RefusalLogOptions) {
    this.what = what;
    this.now = now;
    this.write = write;
  }

  /** Counts one refusal; writes the line when the interval since the last one has passed. */
  refused(reason: string): void {
    this.count++;
    this.last = reason.length > MAX_REFUSAL_REASON_CHARS ? `${reason.slice(0, MAX_REFUSAL_REASON_CHARS)}…` : reason;
    const now = this.now();
    if (now - this.lastLineAt < REFUSAL_LOG_INTERVAL_MS) return;
    this.lastLineAt = now;
    this.write(`relay: ${this.count} ${this.what} since last report (last: ${this.last})`);
    this.count = 0;
  }
}
