/**
 * Keeps rate-limited floods from becoming log floods: at most one line per bucket per second, the line
 * carrying how many decisions on that bucket were left unlogged since the previous one, and at most
 * `maxLinesPerSecond` lines a second from the whole isolate. `log` action records share an isolate-wide
 * allowance of characters a second with these lines, so no policy can turn requests into a log flood. Pure:
 * the clock is injected, memory is bounded by entries (least recently used forgotten first).
 */

/** Lines one bucket may write per second. */
export const LOG_INTERVAL_MS = 1000;
/** Buckets remembered (each entry: a 43-character id and two numbers, about 200 bytes). */
export const MAX_LOGGED_BUCKETS = 4096;
/** Lines the isolate writes per second, all buckets together. */
export const MAX_LOG_LINES_PER_SECOND = 50;
/** Characters of log output (decision lines and `log` records) the isolate writes per second. */
export const MAX_LOG_CHARS_PER_SECOND = 1024 * 1024;

export interface DecisionLogOptions {
  readonly now?: () => number;
  readonly maxBuckets?: number;
  readonly maxLinesPerSecond?: number;
  readonly maxCharsPerSecond?: number;
}

/** Write a line (with the count of decisions suppressed before it), or count this one as suppressed. */
export type LogVerdict = { readonly write: true; readonly suppressed: number; readonly suppressedElsewhere: number } | { readonly write: false };

/** Write a `log` record (with the count of records dropped for the isolate's rate since the last one), or drop it. */
export type RecordVerdict = { readonly write: true; readonly dropped: number } | { readonly write: false };

interface BucketLog {
  lastAt: number;
  suppressed: number;
}

export class DecisionLog {
  private readonly now: () => number;
  private readonly maxBuckets: number;
  private readonly maxLinesPerSecond: number;
  private readonly buckets = new Map<string, BucketLog>();
  private readonly maxCharsPerSecond: number;
  private second = -1;
  private linesThisSecond = 0;
  private charsThisSecond = 0;
  private droppedRecords = 0;
  /** Decisions suppressed by the isolate-wide bound, or on buckets forgotten since: told with the next line. */
  private elsewhere = 0;

  constructor({
    now = Date.now,
    maxBuckets = MAX_LOGGED_BUCKETS,
    maxLinesPerSecond = MAX_LOG_LINES_PER_SECOND,
    maxCharsPerSecond = MAX_LOG_CHARS_PER_SECOND,
  }: DecisionLogOptions = {}) {
    this.now = now;
    this.maxCharsPerSecond = Math.max(1, maxCharsPerSecond);
    this.maxBuckets = Math.max(1, maxBuckets);
    this.maxLinesPerSecond = Math.max(1, maxLinesPerSecond);
  }

  /** Buckets remembered right now. */
  get size(): number {
    return this.buckets.size;
  }

  /** Whether the decision on bucket `id` (a fixed-size hash) gets a line now. */
  decide(id: string): LogVerdict {
    const now = this.now();
    const memory = this.touch(id);
    if (memory && now - memory.lastAt < LOG_INTERVAL_MS) {
      memory.suppressed++;
      return { write: false };
    }
    this.roll(now);
    if (this.linesThisSecond >= this.maxLinesPerSecond) {
      this.elsewhere++;
      return { write: false };
    }
    this.linesThisSecond++;
    const suppressed = memory?.suppressed ?? 0;
    const suppressedElsewhere = this.elsewhere;
    this.elsewhere = 0;
    this.remember(id, { lastAt: now, suppressed: 0 });
    return { write: true, suppressed, suppressedElsewhere };
  }

  /** Counts a written decision line's characters against the isolate's allowance. */
  spend(chars: number): void {
    this.roll(this.now());
    this.charsThisSecond += chars;
  }

  /** Whether a `log` record of `chars` characters fits in this second's allowance. */
  admitRecord(chars: number): RecordVerdict {
    this.roll(this.now());
    if (this.charsThisSecond + chars > this.maxCharsPerSecond) {
      this.droppedRecords++;
      return { write: false };
    }
    this.charsThisSecond += chars;
    const dropped = this.droppedRecords;
    this.droppedRecords = 0;
    return { write: true, dropped };
  }

  private roll(now: number): void {
    const second = Math.floor(now / 1000);
    if (second === this.second) return;
    this.second = second;
    this.linesThisSecond = 0;
    this.charsThisSecond = 0;
  }

  private touch(id: string): BucketLog | undefined {
    const memory = this.buckets.get(id);
    if (memory) {
      this.buckets.delete(id);
      this.buckets.set(id, memory);
    }
    return memory;
  }

  private remember(id: string, memory: BucketLog): void {
    this.buckets.delete(id);
    if (this.buckets.size >= this.maxBuckets) {
      const [oldest, forgotten] = this.buckets.entries().next().value!;
      this.elsewhere += forgotten.suppressed;
      this.buckets.delete(oldest);
    }
    this.buckets.set(id, memory);
  }
}
