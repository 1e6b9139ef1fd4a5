/**
 * The buckets one store object holds: each bucket's sliding window (sliding-window.ts) as a row of a table,
 * the recently used ones also parsed in memory (at most `maxCached`, least recently used forgotten first: a
 * forgotten bucket costs one row read, never a count). A call decides a batch of requests in one synchronous
 * pass, so every decision is atomic and all the batch's writes land in one storage transaction; a bucket
 * touched several times in a batch is written once. Rows whose every admission has left the window are deleted
 * by `evict`, which the object runs from its alarm. The storage and the clock are passed in.
 */

import { expiresAt, type LeaseDecision, type LeaseReturn, take, type WindowSpec, type WindowState } from "./sliding-window.ts";

/** What the table keeps of a bucket. */
export interface BucketRow {
  readonly windowMs: number;
  readonly state: WindowState;
}

/** Where rows live: the object's SQLite table (limiter-object.ts), or a Map in tests. */
export interface RowStore {
  read(id: string): BucketRow | undefined;
  /** Writes the row, with the time after which every admission in it has left the window. */
  write(id: string, row: BucketRow, expires: number): void;
  remove(id: string): void;
  /** Deletes every row that expired at or before `now`; returns the ids deleted. */
  removeExpired(now: number): string[];
  /** The earliest expiry of a row still kept, if any. */
  earliestExpiry(): number | undefined;
}

/** One request's (or one lease's) take, as an isolate sends it: see `take` in sliding-window.ts. */
export interface TakeRequest {
  readonly id: string;
  readonly spec: WindowSpec;
  readonly want: number;
  readonly leaseMs: number;
  readonly returned?: LeaseReturn;
  readonly forRequest: boolean;
}

/** Parsed buckets kept in memory per object by default. */
export const CACHED_BUCKETS = 2048;

export class BucketTable {
  private readonly cached = new Map<string, BucketRow>();

  constructor(
    private readonly store: RowStore,
    private readonly maxCached = CACHED_BUCKETS,
  ) {}

  /** Buckets parsed in memory right now. */
  get cachedCount(): number {
    return this.cached.size;
  }

  /**
   * Decides every request of the batch, in order, at `now`, and writes each changed bucket once. Returns the
   * decisions in the same order, and the earliest expiry among the rows written (undefined when none was).
   */
  takeAll(requests: readonly TakeRequest[], now: number): { decisions: LeaseDecision[]; earliestWritten: number | undefined } {
    const dirty = new Map<string, BucketRow>();
    const decisions = requests.map((request) => {
      // A bucket written earlier in this batch may already be forgotten from memory, and is not stored yet.
      const row = dirty.get(request.id) ?? this.rowOf(request.id);
      const { decision, state } = take(row.state, now, request.spec, request.want, request.leaseMs, request.returned, request.forRequest);
      const next = { windowMs: request.spec.windowMs, state };
      this.remember(request.id, next);
      if (decision.granted > 0 || (request.returned !== undefined && request.returned.count > 0)) dirty.set(request.id, next);
      return decision;
    });
    let earliestWritten: number | undefined;
    for (const [id, row] of dirty) {
      const expires = expiresAt(row.state, row.windowMs);
      if (expires === undefined) {
        this.store.remove(id);
        continue;
      }
      this.store.write(id, row, expires);
      if (earliestWritten === undefined || expires < earliestWritten) earliestWritten = expires;
    }
    return { decisions, earliestWritten };
  }

  /** Deletes the buckets whose admissions have all left their window by `now`. */
  evict(now: number): number {
    const removed = this.store.removeExpired(now);
    for (const id of removed) this.cached.delete(id);
    return removed.length;
  }

  private rowOf(id: string): BucketRow {
    const known = this.cached.get(id);
    if (known) {
      this.cached.delete(id);
      return known;
    }
    return this.store.read(id) ?? { windowMs: 0, state: { subWindows: [] } };
  }

  /** Most recently used last, so the first entry is the one to forget. */
  private remember(id: string, row: BucketRow): void {
    this.cached.delete(id);
    this.cached.set(id, row);
    if (this.cached.size > this.maxCached) this.cached.delete(this.cached.keys().next().value!);
  }
}
