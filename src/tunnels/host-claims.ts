/**
 * Who may serve a public host label, as plain values with the clock passed in. A label belongs to the
 * account whose tunnel claimed it: while that tunnel is online nobody else gets it, and after it goes
 * offline (its agent disconnected, or the edge was redeployed) only the same account may claim it again
 * for HOST_GRACE_MS, so another account cannot take over a URL in the seconds before the owner's agent
 * reconnects. After the grace period the label is free.
 */

/** Who serves a host: enough for the Worker to relay without asking anyone else. */
export interface HostClaim {
  readonly accountId: string;
  readonly sessionId: string;
  readonly tunnelId: string;
  /** The tunnel's traffic policy document (validated when the tunnel started). */
  readonly trafficPolicy?: unknown;
}

/** What a host object keeps: the last claim, and when its tunnel went offline (absent while online). */
export interface HostRecord {
  readonly claim: HostClaim;
  readonly releasedAt?: number;
}

/** How long a label stays reserved for its account after its tunnel went offline. */
export const HOST_GRACE_MS = 10 * 60_000;
/** Host labels one account may hold at once: its online endpoint tunnels plus those still in their grace period. */
export const MAX_HOSTS_PER_ACCOUNT = 50;

export type ClaimDecision = { readonly ok: true; readonly record: HostRecord } | { readonly ok: false; readonly reason: string; readonly record?: HostRecord };

/**
 * Decides a claim. `holderOnline` says whether the current holder's session still serves its tunnel (only
 * asked when the record says it is online). A holder found offline counts as released now, so its
 * account's grace starts when the edge first notices.
 */
export function decideClaim(record: HostRecord | undefined, claim: HostClaim, holderOnline: () => boolean, now: number): ClaimDecision {
  if (!record || record.claim.tunnelId === claim.tunnelId) return { ok: true, record: { claim } };
  let current = record;
  if (current.releasedAt === undefined) {
    if (holderOnline()) return { ok: false, reason: "is in use by another online tunnel" };
    current = { claim: current.claim, releasedAt: now };
  }
  if (current.claim.accountId === claim.accountId) return { ok: true, record: { claim } };
  const freeAt = current.releasedAt! + HOST_GRACE_MS;
  if (now < freeAt) {
    return { ok: false, reason: `is reserved for the account that used it last, until ${new Date(freeAt).toISOString()}`, record: current };
  }
  return { ok: true, record: { claim } };
}

/** The record after `tunnelId` went offline; unchanged when another tunnel holds the label. */
export function releaseClaim(record: HostRecord | undefined, tunnelId: string, now: number): HostRecord | undefined {
  if (!record || record.claim.tunnelId !== tunnelId || record.releasedAt !== undefined) return record;
  return { claim: record.claim, releasedAt: now };
}

/** True once a released record's grace is over and it can be forgotten. */
export function isExpired(record: HostRecord, now: number): boolean {
  return record.releasedAt !== undefined && now >= record.releasedAt + HOST_GRACE_MS;
}
