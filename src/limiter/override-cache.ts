/**
 * One isolate's copy of the rate-limit overrides, per account, and how fresh it is kept: a decision never uses a
 * copy read more than `awaitAfterMs` ago (900 ms), so a change through the management API reaches live traffic
 * in every isolate within about a second. A copy older than `refreshAfterMs` (250 ms) is refreshed in the
 * background, after a request's response, so busy traffic never waits for it; only a request that finds the copy
 * older than `awaitAfterMs` (a quiet isolate) reads the store itself before deciding. Requests that find it so
 * while such a read is out wait for that read instead of sending their own: a burst on a quiet isolate costs the
 * account's store one read, not one per request (the store is one object per account, and each read queues there).
 *
 * The age of a copy counts from when its read was sent, so it is never younger than what it shows. Only resolved
 * values are shared between requests: workerd ties I/O to the request that started it, so a request never awaits
 * a read another request made (see src/gateway/modules/route-modules.ts).
 */

import { type LimitOverride, NO_OVERRIDES, OverrideIndex } from "./override-match.ts";
import { makeRoom } from "../bounded-map.ts";

/** Copies older than this are refreshed after the response of the request that notices. */
export const REFRESH_AFTER_MS = 250;
/** Copies older than this are not used: the request reads the store first. */
export const AWAIT_AFTER_MS = 900;
/**
 * Accounts remembered at most. Accounts come from the configuration (the edge owner) and from tunnels' claims,
 * never from what a client sends; past this the least recently read account is forgotten (one store read).
 */
export const MAX_REMEMBERED_ACCOUNTS = 256;
/** First pause of a request waiting for another request's read of the same account; each later one doubles. */
const FIRST_LOOK_MS = 2;
/** Longest pause between two looks at that read. */
const MAX_LOOK_MS = 64;
/** At most one log line per account this often when its overrides cannot be read. */
const ERROR_LOG_INTERVAL_MS = 1_000;

/** Reads the live overrides of one account from the store (the management layer's, handed in by worker.ts). */
export type OverrideRead = (accountId: string) => Promise<readonly LimitOverride[]>;

/** Work a request may leave running after its response. */
export interface Background {
  waitUntil(task: Promise<unknown>): void;
}

export interface OverrideCacheOptions {
  readonly now?: () => number;
  readonly refreshAfterMs?: number;
  readonly awaitAfterMs?: number;
  readonly maxAccounts?: number;
  /** Pauses a request waiting for another's read (a timer of its own: no promise passes between requests). */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** A read a request waits for before deciding, while it is out or after it failed. */
interface AwaitedRead {
  /** When it was sent. */
  readonly sent: number;
  failed: boolean;
}

interface Copy {
  /** When the read that produced it was sent. */
  readonly readAt: number;
  readonly index: OverrideIndex;
  /** By id: the override objects, reused by the next copy when unchanged (what was compiled from them stays valid). */
  readonly byId: ReadonlyMap<string, LimitOverride>;
  /** When a background refresh was sent (0: none in flight). */
  refreshingSince: number;
  lastErrorLog: number;
}

export interface OverrideCacheStats {
  /** Reads a request waited for, and reads sent after a response. */
  awaitedReads: number;
  /** Requests that waited for a read another request had sent, instead of sending their own. */
  sharedReads: number;
  backgroundReads: number;
  failedReads: number;
}

export class OverrideCache {
  readonly stats: OverrideCacheStats = { awaitedReads: 0, sharedReads: 0, backgroundReads: 0, failedReads: 0 };
  private readonly sleep: (ms: number) => Promise<void>;
  /** Per account, the last read a request waited for (at most one out at a time, so a burst shares it). */
  private readonly awaited = new Map<string, AwaitedRead>();
  private readonly now: () => number;
  private readonly refreshAfterMs: number;
  private readonly awaitAfterMs: number;
  private readonly maxAccounts: number;
  private readonly copies = new Map<string, Copy>();

  constructor({
    now = Date.now,
    refreshAfterMs = REFRESH_AFTER_MS,
    awaitAfterMs = AWAIT_AFTER_MS,
    maxAccounts = MAX_REMEMBERED_ACCOUNTS,
    sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  }: OverrideCacheOptions = {}) {
    this.sleep = sleep;
    this.now = now;
    this.refreshAfterMs = refreshAfterMs;
    this.awaitAfterMs = awaitAfterMs;
    this.maxAccounts = Math.max(1, maxAccounts);
  }

  /**
   * The overrides of `accountId` to decide with now: the copy held while fresh enough (sending a refresh through
   * `background` when it is getting old), else a promise of a read no older than `awaitAfterMs`: the one another
   * request has out, or this request's own.
   */
  indexOf(accountId: string, read: OverrideRead, background?: Background): OverrideIndex | Promise<OverrideIndex> {
    const copy = this.copies.get(accountId);
    const now = this.now();
    if (copy && now - copy.readAt < this.awaitAfterMs) {
      const refreshIdle = copy.refreshingSince === 0 || now - copy.refreshingSince >= this.awaitAfterMs;
      if (background && now - copy.readAt >= this.refreshAfterMs && refreshIdle) {
        copy.refreshingSince = now;
        this.stats.backgroundReads++;
        background.waitUntil(this.read(accountId, read, now));
      }
      return copy.index;
    }
    return this.afterStale(accountId, read, now);
  }

  /** With no copy fresh enough: the read another request has out and still fresh enough, else this request's own. */
  private afterStale(accountId: string, read: OverrideRead, now: number): Promise<OverrideIndex> {
    const out = this.awaited.get(accountId);
    if (out && !out.failed && now - out.sent < this.awaitAfterMs) {
      this.stats.sharedReads++;
      return this.readOf(accountId, out, read);
    }
    return this.awaitedRead(accountId, read, now);
  }

  /** This request's own read, which requests coming while it is out wait for. */
  private async awaitedRead(accountId: string, read: OverrideRead, now: number): Promise<OverrideIndex> {
    this.stats.awaitedReads++;
    const mine: AwaitedRead = { sent: now, failed: false };
    this.awaited.delete(accountId);
    makeRoom(this.awaited, this.maxAccounts);
    this.awaited.set(accountId, mine);
    const index = await this.read(accountId, read, now, mine);
    if (this.awaited.get(accountId) === mine && !mine.failed) this.awaited.delete(accountId);
    return index;
  }

  /**
   * What the read `out` (another request's) brought, looked at on this request's own timer until it lands. A read
   * that failed answers as this request's own failing read would (the action's own limits); one that lands too late
   * to use, or not at all within `awaitAfterMs` of being sent, leaves this request where it started (`afterStale`).
   */
  private async readOf(accountId: string, out: AwaitedRead, read: OverrideRead): Promise<OverrideIndex> {
    for (let pause = FIRST_LOOK_MS; ; pause = Math.min(MAX_LOOK_MS, 2 * pause)) {
      await this.sleep(Math.min(pause, Math.max(1, out.sent + this.awaitAfterMs - this.now())));
      const now = this.now();
      const copy = this.copies.get(accountId);
      if (copy && copy.readAt >= out.sent && now - copy.readAt < this.awaitAfterMs) return copy.index;
      if (out.failed) return NO_OVERRIDES;
      if (now - out.sent >= this.awaitAfterMs || this.awaited.get(accountId) !== out) return this.afterStale(accountId, read, now);
    }
  }

  /** Reads the account's overrides sent at `sent` and keeps them unless a newer read already landed. */
  private async read(accountId: string, read: OverrideRead, sent: number, awaited?: AwaitedRead): Promise<OverrideIndex> {
    let overrides: readonly LimitOverride[];
    try {
      overrides = await read(accountId);
    } catch (error) {
      if (awaited) awaited.failed = true;
      this.stats.failedReads++;
      const held = this.copies.get(accountId);
      if (held) held.refreshingSince = 0;
      const now = this.now();
      if (!held || now - held.lastErrorLog >= ERROR_LOG_INTERVAL_MS) {
        if (held) held.lastErrorLog = now;
        console.error(`rate-limit overrides of ${accountId}: cannot read them, the action's own limits apply: ${(error as Error).message}`);
      }
      // A copy too old to trust is not used: the action's own limits are what the policy in git says.
      return NO_OVERRIDES;
    }
    const held = this.copies.get(accountId);
    if (held && held.readAt > sent) return held.index;
    const byId = new Map<string, LimitOverride>();
    for (const override of overrides) {
      const previous = held?.byId.get(override.id);
      byId.set(override.id, previous && previous.version === override.version ? previous : override);
    }
    const index = byId.size === 0 ? NO_OVERRIDES : new OverrideIndex([...byId.values()]);
    this.copies.delete(accountId);
    makeRoom(this.copies, this.maxAccounts);
    this.copies.set(accountId, { readAt: sent, index, byId, refreshingSince: 0, lastErrorLog: held?.lastErrorLog ?? 0 });
    return index;
  }
}
