/**
 * RateLimiter: the Durable Object holding many buckets of one rate-limit action (see bucket-shards.ts for which):
 * a thin shell giving bucket-table.ts the object's SQLite table and the alarm that deletes expired rows. Callers
 * pass their clock (`now`, epoch ms), as the CircuitBreaker's do: the isolate that asks decides by the clock its
 * memory of leases and blocked buckets runs on, and tests drive both with one injected clock. The object reads
 * its own clock only for the alarm, which no caller starts.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { decodeRow, encodeRow, settleProblem, takeProblem } from "./bucket-row.ts";
import { type ReadRequest, readBucket, type WindowReading } from "./bucket-readback.ts";
import { MAX_TAKES_PER_CALL } from "./calls-in-flight.ts";
import { BucketTable, type RowStore, type SettleRequest, type TakeRequest } from "./bucket-table.ts";
import { MAX_BUCKET_ID_LENGTH } from "./isolate-buckets.ts";
import { type MigrationStep, migrateSchema } from "../sqlite-migrations.ts";
import type { LeaseDecision } from "./sliding-window.ts";

export { MAX_TAKES_PER_CALL };
/**
 * Expired rows are deleted at most this often. A row past its expiry is never counted (its admissions have left
 * the window), so deleting it later only keeps it on disk longer; and the table has no index on expiry, because
 * an index doubles the rows written of every take (the billed storage operation), while a scan a minute only
 * reads rows (a thousandth of the price). See docs/rate-limits.md.
 */
const EVICTION_INTERVAL_MS = 60_000;

/**
 * The object's schema (src/sqlite-migrations.ts), applied to a new object and to one whose storage `deleteAll`
 * dropped. Step 1 is the table objects made before the helper too, so theirs is kept as it is.
 */
const LIMITER_MIGRATIONS: readonly MigrationStep[] = [
  "CREATE TABLE IF NOT EXISTS buckets (id TEXT PRIMARY KEY, window_ms INTEGER NOT NULL, expires INTEGER NOT NULL, state TEXT NOT NULL) WITHOUT ROWID",
];

/**
 * Rows in `sql`, which must be the handle the object's constructor got: one taken during an event (an alarm)
 * belongs to that event, and using it in a later call fails with "Cannot perform I/O on behalf of a different
 * request".
 */
function sqlRows(sql: SqlStorage): RowStore {
  return {
    read(id) {
      const rows = sql.exec<{ window_ms: number; state: string }>("SELECT window_ms, state FROM buckets WHERE id = ?", id).toArray();
      return rows.length === 0 ? undefined : decodeRow(rows[0]!.window_ms, rows[0]!.state);
    },
    write(id, row, expires) {
      const { windowMs, text } = encodeRow(row);
      sql.exec(
        "INSERT INTO buckets (id, window_ms, expires, state) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET window_ms = excluded.window_ms, expires = excluded.expires, state = excluded.state",
        id,
        windowMs,
        expires,
        text,
      );
    },
    remove(id) {
      sql.exec("DELETE FROM buckets WHERE id = ?", id);
    },
    removeExpired(now) {
      return sql
        .exec<{ id: string }>("DELETE FROM buckets WHERE expires <= ? RETURNING id", now)
        .toArray()
        .map((row) => row.id);
    },
    earliestExpiry() {
      const [row] = sql.exec<{ earliest: number | null }>("SELECT MIN(expires) AS earliest FROM buckets").toArray();
      return row?.earliest ?? undefined;
    },
  };
}

/** The caller's `now` when it is a time the object can decide at (epoch milliseconds), else why not. */
function clockProblem(now: unknown): string | undefined {
  return Number.isSafeInteger(now) && (now as number) >= 0 ? undefined : "now is a time in whole epoch milliseconds";
}

/** A call the object would not decide, and why (nothing was counted). */
export interface StoreRefusal {
  readonly refused: string;
}

export class RateLimiter extends DurableObject<Env> {
  private readonly rows: RowStore;
  private readonly table: BucketTable;
  /** When the alarm is set for, as far as this instance knows (undefined: not read yet since it started). */
  private alarmAt: number | null | undefined;
  /** The write every call decided since the last one waits for (group commit); undefined when none is due. */
  private nextCommit: Promise<void> | undefined;
  /** Transactions written since the instance started (group commit makes it smaller than the calls counted). */
  commits = 0;
  /** Storage being cleared by the alarm: writes wait for it, so none lands in the table it drops. */
  private clearing: Promise<void> | undefined;
  /** The latest `now` a caller gave: isolates' clocks differ a little, and a bucket's time never runs back. */
  private latestNow = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrateSchema(ctx.storage, LIMITER_MIGRATIONS);
    this.rows = sqlRows(ctx.storage.sql);
    this.table = new BucketTable(this.rows);
  }

  /**
   * Decides a batch of takes, in order (see `take` in sliding-window.ts: each counts one request and may lease
   * further admissions to the calling isolate, or hand leased ones back). The decisions are made at once,
   * without yielding, so each is atomic; a call that counted something is answered only after its writes are
   * stored, together with those of every call decided meanwhile (one transaction for all: what a commit costs
   * is most of what a call costs). A call that counted nothing (every take refused) is answered at once: what
   * it refused on can only be undone by a write failing, and then refusing was merely cautious.
   */
  async takeAll(requests: readonly TakeRequest[], now: number): Promise<LeaseDecision[] | StoreRefusal> {
    // Refused with an answer, not a throw: an exception thrown by an RPC method is also reported as uncaught in
    // the object, and the caller turns the refusal into its error all the same.
    if (!Array.isArray(requests) || requests.length > MAX_TAKES_PER_CALL) return { refused: `a call carries at most ${MAX_TAKES_PER_CALL} takes` };
    for (const request of requests) {
      if (typeof request.id !== "string" || request.id.length === 0 || request.id.length > MAX_BUCKET_ID_LENGTH) {
        return { refused: `bucket ids are hashes of 1 to ${MAX_BUCKET_ID_LENGTH} characters` };
      }
      const problem = takeProblem(request);
      if (problem) return { refused: problem };
    }
    const clock = clockProblem(now);
    if (clock) return { refused: clock };
    const { decisions, changed } = this.table.decide(requests, this.at(now));
    if (!changed) return decisions;
    try {
      await this.commit();
    } catch (error) {
      return { refused: `the store could not write: ${(error as Error).message}` };
    }
    return decisions;
  }

  /**
   * Settles reservations made by earlier takes (settle.ts): each replaces its reservation's estimate with the
   * settled cost, once; `applied[i]` false when settle i found no open reservation (a duplicate, or too late),
   * which counted nothing. Stored with the same group commit as takes.
   */
  async settleAll(requests: readonly SettleRequest[], now: number): Promise<{ applied: boolean[] } | StoreRefusal> {
    if (!Array.isArray(requests) || requests.length > MAX_TAKES_PER_CALL) return { refused: `a call carries at most ${MAX_TAKES_PER_CALL} settles` };
    for (const request of requests) {
      if (typeof request.id !== "string" || request.id.length === 0 || request.id.length > MAX_BUCKET_ID_LENGTH) {
        return { refused: `bucket ids are hashes of 1 to ${MAX_BUCKET_ID_LENGTH} characters` };
      }
      const problem = settleProblem(request);
      if (problem) return { refused: problem };
    }
    const clock = clockProblem(now);
    if (clock) return { refused: clock };
    const { applied, changed } = this.table.settle(requests, this.at(now));
    if (!changed) return { applied };
    try {
      await this.commit();
    } catch (error) {
      return { refused: `the store could not write: ${(error as Error).message}` };
    }
    return { applied };
  }

  /** The caller's `now`, or the latest one given before when it is later. */
  private at(now: number): number {
    if (now > this.latestNow) this.latestNow = now;
    return this.latestNow;
  }

  /**
   * Reads buckets back (bucket-readback.ts) at the caller's `now`, as takes are decided: each rule's capacity, what
   * is counted, what remains. Counts nothing and writes nothing; decisions not yet stored are seen, as the next
   * take would see them.
   */
  async readAll(requests: readonly ReadRequest[], now: number): Promise<WindowReading[][] | StoreRefusal> {
    const late = clockProblem(now);
    if (late) return { refused: late };
    if (!Array.isArray(requests) || requests.length > MAX_TAKES_PER_CALL) return { refused: `a call carries at most ${MAX_TAKES_PER_CALL} reads` };
    for (const request of requests) {
      if (typeof request.id !== "string" || request.id.length === 0 || request.id.length > MAX_BUCKET_ID_LENGTH) {
        return { refused: `bucket ids are hashes of 1 to ${MAX_BUCKET_ID_LENGTH} characters` };
      }
      const problem = takeProblem({ id: request.id, windows: request.windows, want: 1, leaseMs: 0, forRequest: true });
      if (problem) return { refused: problem };
    }
    return requests.map((request) => readBucket(this.table.peek(request.id), request.windows, now));
  }

  /** The next write of the table's pending buckets, shared by every call decided before it starts. */
  private commit(): Promise<void> {
    this.nextCommit ??= (async () => {
      // A macrotask, not a microtask: calls already delivered to the object are decided before it runs.
      await new Promise((resolve) => setTimeout(resolve, 0));
      await this.clearing;
      this.nextCommit = undefined;
      // One transaction: a write that fails leaves storage as it was, and the table goes back to it.
      const earliest = this.ctx.storage.transactionSync(() => this.table.flush());
      this.commits++;
      if (earliest !== undefined) this.scheduleEviction(earliest, Date.now());
    })();
    return this.nextCommit;
  }

  /** Deletes expired buckets; an object left with none deletes its storage (older versions' included). */
  override async alarm(): Promise<void> {
    const now = Date.now();
    this.alarmAt = null;
    this.table.evict(now);
    if (this.table.pendingCount > 0 || this.clearing) return;
    const next = this.rows.earliestExpiry();
    if (next !== undefined) {
      this.scheduleEviction(next, now);
      return;
    }
    // deleteAll drops the table too; the object may be called again at once, and its writes wait for this.
    this.clearing = this.ctx.storage.deleteAll().then(() => void migrateSchema(this.ctx.storage, LIMITER_MIGRATIONS));
    try {
      await this.clearing;
    } finally {
      this.clearing = undefined;
    }
  }

  private scheduleEviction(expires: number, now: number): void {
    if (this.alarmAt === undefined) {
      // First write since the instance started: an alarm set earlier may be later than this row's expiry.
      this.alarmAt = null;
      const earliest = this.rows.earliestExpiry();
      if (earliest !== undefined && earliest < expires) expires = earliest;
    }
    const at = Math.max(expires, now + EVICTION_INTERVAL_MS);
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }
}
