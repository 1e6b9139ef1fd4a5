/**
 * One isolate's copy of the rate-limit overrides, per account, and how fresh it is kept: a decision never uses a
 * copy read more than `awaitAfterMs` ago (900 ms), so a change through the management API reaches live traffic
 * in every isolate within about a second. A copy older than `refreshAfterMs` (250 ms) is refreshed in the
 * background, after a request's response, so busy traffic never waits for it; only a request that finds the copy
 * older than `awaitAfterMs` (a quiet isolate) reads the store itself before deciding.
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
  backgroundReads: number;
  failedReads: number;
}

export class OverrideCache {
  readonly stats: OverrideCacheStats = { awaitedReads: 0, backgroundReads: 0, failedReads: 0 };
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
  }: OverrideCacheOptions = {}) {
    this.now = now;
    this.refreshAfterMs = refreshAfterMs;
    this.awaitAfterMs = awaitAfterMs;
    this.maxAccounts = Math.max(1, maxAccounts);
  }

  /**
   * The overrides of `accountId` to decide with now: the copy held while fresh enough (sending a refresh through
   * `background` when it is getting old), else a promise of this request's own read.
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
    this.stats.awaitedReads++;
    return this.read(accountId, read, now);
  }

  /** Reads the account's overrides sent at `sent` and keeps them unless a newer read already landed. */
  private async read(accountId: string, read: OverrideRead, sent: number): Promise<OverrideIndex> {
    let overrides: readonly LimitOverride[];
    try {
      overrides = await read(accountId);
    } catch (error) {
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
