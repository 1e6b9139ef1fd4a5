/**
 * What one isolate remembers of tunnel hosts: label → the tunnels that serve it (one, or an endpoint pool's
 * members), trusted for HOST_CACHE_MS. A stale entry costs one "offline" answer, then the member is dropped
 * here and the host resolved again. Bounded by bytes: each claim carries its tunnel's traffic policy (up to
 * 16 KiB of JSON).
 */

import type { HostClaim } from "./host-claims.ts";
import { freeBudget } from "../bounded-map.ts";

export const HOST_CACHE_MS = 5000;
/** Default memory bound of one isolate's host cache. */
export const HOST_CACHE_BYTES = 4 * 1024 * 1024;
/** Heap of one entry besides its policies: the label, the claims' ids, the map entry. */
const ENTRY_BYTES = 512;
/** Heap of each further member of a pool besides its policy. */
const MEMBER_BYTES = 256;

interface Entry {
  readonly members: readonly HostClaim[];
  /** The serving sessions' Durable Object ids, by tunnel, once asked for (idFromName hashes the name each time). */
  readonly sessionIds: Map<string, DurableObjectId>;
  readonly until: number;
  readonly bytes: number;
}

export class HostCache {
  private readonly entries = new Map<string, Entry>();
  /** Remembered tunnels' accounts, by tunnel id: whose rate-limit overrides apply to a tunnel's buckets. */
  private readonly accounts = new Map<string, string>();
  private readonly now: () => number;
  private readonly maxBytes: number;
  private bytes = 0;

  constructor({ now = Date.now, maxBytes = HOST_CACHE_BYTES }: { now?: () => number; maxBytes?: number } = {}) {
    this.now = now;
    this.maxBytes = maxBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The tunnels remembered serving `label` (never empty), while they are fresh. */
  get(label: string): readonly HostClaim[] | undefined {
    const entry = this.entries.get(label);
    return entry && entry.until > this.now() ? entry.members : undefined;
  }

  /**
   * The account of tunnel `tunnelId` while one of its hosts is remembered here (stale or not): a tunnel's policy
   * runs right after its host was resolved, which remembers it. Undefined once forgotten.
   */
  accountOf(tunnelId: string): string | undefined {
    return this.accounts.get(tunnelId);
  }

  /** The id of the session serving `label` under `claim`, made once per remembered claim. */
  sessionId(label: string, claim: HostClaim, make: () => DurableObjectId): DurableObjectId {
    const entry = this.entries.get(label);
    if (!entry?.members.includes(claim)) return make();
    let id = entry.sessionIds.get(claim.tunnelId);
    if (!id) entry.sessionIds.set(claim.tunnelId, (id = make()));
    return id;
  }

  remember(label: string, members: readonly HostClaim[]): void {
    this.forget(label);
    if (members.length === 0) return;
    let bytes = ENTRY_BYTES + 2 * label.length + MEMBER_BYTES * (members.length - 1);
    for (const claim of members) bytes += 2 * (claim.trafficPolicy === undefined ? 0 : JSON.stringify(claim.trafficPolicy).length);
    if (bytes > this.maxBytes) return;
    freeBudget(
      this.entries,
      bytes,
      this.maxBytes,
      () => this.bytes,
      (oldest) => this.forget(oldest),
    );
    this.entries.set(label, { members, sessionIds: new Map(), until: this.now() + HOST_CACHE_MS, bytes });
    this.bytes += bytes;
    for (const claim of members) this.accounts.set(claim.tunnelId, claim.accountId);
  }

  /**
   * A member turned out not to serve `label` any more: the others stay remembered (until their time is up),
   * so the next requests here go to them; with none left the label is forgotten.
   */
  forgetMember(label: string, tunnelId: string): void {
    const entry = this.entries.get(label);
    if (!entry) return;
    const rest = entry.members.filter((claim) => claim.tunnelId !== tunnelId);
    if (rest.length === entry.members.length) return;
    if (rest.length === 0) return this.forget(label);
    entry.sessionIds.delete(tunnelId);
    this.accounts.delete(tunnelId);
    this.entries.set(label, { ...entry, members: rest });
  }

  forget(label: string): void {
    const entry = this.entries.get(label);
    if (!entry) return;
    this.entries.delete(label);
    this.bytes -= entry.bytes;
    for (const claim of entry.members) this.accounts.delete(claim.tunnelId);
  }
}
