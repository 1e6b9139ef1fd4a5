/**
 * The buckets one store object holds: each bucket's windows (bucket-row.ts) as a row of a table,
 * the recently used ones also parsed in memory (at most `maxCached`, least recently used forgotten first: a
 * forgotten bucket costs one row read, never a count). `decide` decides a batch of requests in one synchronous
 * pass, so every decision is atomic; `flush` then writes every bucket changed since the last flush, each once,
 * so the decisions of several calls can share one storage transaction (group commit: the object answers them
 * only after it). Rows whose every admission has left the window are deleted by `evict`, which the object runs
 * from its alarm. The storage and the clock are passed in.
 */

import { type BucketRow, decideRow, emptyRow, rowExpiry, type SettleRequest, settleRow, type TakeRequest } from "./bucket-row.ts";
import type { LeaseDecision } from "./sliding-window.ts";
import { makeRoom } from "../bounded-map.ts";

export type { BucketRow, SeedRow, SettleRequest, TakeRequest } from "./bucket-row.ts";

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

/** Parsed buckets kept in memory per object by default. */
export const CACHED_BUCKETS = 2048;

export class BucketTable {
  private readonly cached = new Map<string, BucketRow>();
  /** Buckets changed by decisions not yet written: written together by `flush` (one storage transaction). */
  private readonly pending = new Map<string, BucketRow>();

  constructor(
    private readonly store: RowStore,
    private readonly maxCached = CACHED_BUCKETS,
  ) {}

  /** Buckets parsed in memory right now (those waiting to be written besides). */
  get cachedCount(): number {
    return this.cached.size;
  }

  /** Buckets changed since the last `flush`. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * Decides every request, in order, at `now`, against the buckets as earlier decisions left them (written or
   * not), and remembers each changed bucket for the next `flush` (`changed`: whether any was). The caller must
   * not answer a decision that changed a bucket before the flush that follows it succeeded: until then it
   * exists only in memory.
   */
  decide(requests: readonly TakeRequest[], now: number): { decisions: LeaseDecision[]; changed: boolean } {
    let changed = false;
    const decisions = requests.map((request) => {
      const { decision, row: next, changed: rowChanged } = decideRow(this.rowOf(request.id), request, now);
      this.remember(request.id, next);
      if (rowChanged) {
        this.pending.set(request.id, next);
        changed = true;
      }
      return decision;
    });
    return { decisions, changed };
  }

  /**
   * Settles reservations, in order, at `now` (settle.ts): `applied[i]` false when request i found no open
   * reservation of its id (a duplicate, or one that expired), which changes nothing. As with `decide`, a settle
   * exists only in memory until the `flush` that follows it succeeded.
   */
  settle(requests: readonly SettleRequest[], now: number): { applied: boolean[]; changed: boolean } {
    let changed = false;
    const applied = requests.map((request) => {
      const before = this.rowOf(request.id);
      const { row, applied: done } = settleRow(before, request, now);
      this.remember(request.id, row);
      if (done) {
        this.pending.set(request.id, row);
        changed = true;
      }
      return done;
    });
    return { applied, changed };
  }

  /**
   * Writes every bucket changed since the last flush, each once; returns the earliest expiry among the rows
   * written (undefined when none was). A write that throws leaves the table as storage has it (see `forget`).
   */
  flush(): number | undefined {
    let earliestWritten: number | undefined;
    try {
      for (const [id, row] of this.pending) {
        const expires = rowExpiry(row);
        if (expires === undefined) {
          this.store.remove(id);
          continue;
        }
        this.store.write(id, row, expires);
        if (earliestWritten === undefined || expires < earliestWritten) earliestWritten = expires;
      }
    } catch (error) {
      this.forget();
      throw error;
    }
    this.pending.clear();
    return earliestWritten;
  }

  /**
   * Drops everything held in memory, unwritten changes included: after a failed write the decisions that made
   * them are answered as errors, so storage, which never saw them, is the truth again.
   */
  forget(): void {
    this.pending.clear();
    this.cached.clear();
  }

  /**
   * The bucket's row as the decisions so far left it (written or not), changing nothing, not even which rows
   * stay parsed in memory: a read-back must not push a busy bucket out of the cache.
   */
  peek(id: string): BucketRow {
    return this.pending.get(id) ?? this.cached.get(id) ?? this.store.read(id) ?? emptyRow;
  }

  /** Deletes the buckets whose admissions have all left their window by `now`. */
  evict(now: number): number {
    const removed = this.store.removeExpired(now);
    for (const id of removed) this.cached.delete(id);
    return removed.length;
  }

  private rowOf(id: string): BucketRow {
    // A bucket decided since the last flush may already be forgotten from the cache, and is not stored yet.
    const known = this.pending.get(id) ?? this.cached.get(id);
    if (known) {
      this.cached.delete(id);
      return known;
    }
    return this.store.read(id) ?? emptyRow;
  }

  /** Most recently used last, so the first entry is the one to forget. */
  private remember(id: string, row: BucketRow): void {
    this.cached.delete(id);
    makeRoom(this.cached, this.maxCached);
    this.cached.set(id, row);
  }
}
