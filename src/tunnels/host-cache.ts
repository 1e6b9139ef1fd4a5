/**
 * What one isolate remembers of tunnel hosts: label → the claim that serves it, trusted for HOST_CACHE_MS.
 * A stale entry costs one "offline" answer, then the host is resolved again. Bounded by bytes: a claim
 * carries its tunnel's traffic policy (up to 16 KiB of JSON).
 */

import type { HostClaim } from "./host-claims.ts";

export const HOST_CACHE_MS = 5000;
/** Default memory bound of one isolate's host cache. */
export const HOST_CACHE_BYTES = 4 * 1024 * 1024;
/** Heap of one entry besides its policy: the label, the claim's ids, the map entry. */
const ENTRY_BYTES = 512;

interface Entry {
  readonly claim: HostClaim;
  /** The serving session's Durable Object id, once asked for (idFromName hashes the name each time). */
  sessionId?: DurableObjectId;
  readonly until: number;
  readonly bytes: number;
}

export class HostCache {
  private readonly entries = new Map<string, Entry>();
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

  /** The claim remembered for `label`, while it is fresh. */
  get(label: string): HostClaim | undefined {
    const entry = this.entries.get(label);
    return entry && entry.until > this.now() ? entry.claim : undefined;
  }

  /** The id of the session serving `label` under `claim`, made once per remembered claim. */
  sessionId(label: string, claim: HostClaim, make: () => DurableObjectId): DurableObjectId {
    const entry = this.entries.get(label);
    if (entry?.claim !== claim) return make();
    entry.sessionId ??= make();
    return entry.sessionId;
  }

  remember(label: string, claim: HostClaim): void {
    this.forget(label);
    const bytes = ENTRY_BYTES + 2 * label.length + 2 * (claim.trafficPolicy === undefined ? 0 : JSON.stringify(claim.trafficPolicy).length);
    if (bytes > this.maxBytes) return;
    while (this.bytes + bytes > this.maxBytes) this.forget(this.entries.keys().next().value!);
    this.entries.set(label, { claim, until: this.now() + HOST_CACHE_MS, bytes });
    this.bytes += bytes;
  }

  forget(label: string): void {
    const entry = this.entries.get(label);
    if (!entry) return;
    this.entries.delete(label);
    this.bytes -= entry.bytes;
  }
}
