/**
 * Who may serve a public host label, as plain values with the clock passed in. A label belongs to the
 * account whose tunnel claimed it: while that tunnel is online nobody else gets it, and after it goes
 * offline (its agent disconnected, or the edge was redeployed) only the same account may claim it again
 * for HOST_GRACE_MS, so another account cannot take over a URL in the seconds before the owner's agent
 * reconnects. After the grace period the label is free. A tunnel stopped on purpose frees its label at once.
 */

/** Who serves a host: enough for the Worker to relay without asking anyone else. */
export interface HostClaim {
  readonly accountId: string;
  readonly sessionId: string;
  readonly tunnelId: string;
  /** The tunnel's traffic policy document (validated when the tunnel started). */
  readonly trafficPolicy?: unknown;
  /**
   * The edge chose the label at random (62 bits, unguessable), possibly for an earlier tunnel of the same
   * account that the agent is now bringing back. Such a label needs no quota hold while its tunnel is offline.
   */
  readonly random?: boolean;
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

/**
 * `noticed`: on a refusal, the record with the holder marked released because it was found offline; the
 * caller saves it only onto the very record the decision read (nothing else is written on a refusal).
 */
export type ClaimDecision = { readonly ok: true; readonly record: HostRecord } | { readonly ok: false; readonly reason: string; readonly noticed?: HostRecord };

/** Whether deciding `claim` needs to ask the current holder's session if it is still online. */
export function needsHolderCheck(record: HostRecord | undefined, claim: HostClaim): record is HostRecord {
  return record !== undefined && record.releasedAt === undefined && record.claim.tunnelId !== claim.tunnelId;
}

/** True when two reads of a host's record name the same holder in the same state. */
export function sameRecord(a: HostRecord | undefined, b: HostRecord | undefined): boolean {
  if (!a || !b) return a === b;
  return a.claim.tunnelId === b.claim.tunnelId && a.releasedAt === b.releasedAt;
}

/**
 * Decides a claim. `holderOnline` says whether the current holder's session still serves its tunnel (only
 * asked when needsHolderCheck says so). A holder found offline counts as released now, so its account's
 * grace starts when the edge first notices. The same account taking its label back keeps it random if it was.
 */
export function decideClaim(record: HostRecord | undefined, claim: HostClaim, holderOnline: () => boolean, now: number): ClaimDecision {
  if (!record || record.claim.tunnelId === claim.tunnelId) return { ok: true, record: { claim } };
  let current = record;
  if (current.releasedAt === undefined) {
    if (holderOnline()) return { ok: false, reason: "is in use by another online tunnel" };
    current = { claim: current.claim, releasedAt: now };
  }
  if (current.claim.accountId === claim.accountId) {
    return { ok: true, record: { claim: current.claim.random && !claim.random ? { ...claim, random: true } : claim } };
  }
  const freeAt = current.releasedAt! + HOST_GRACE_MS;
  if (now < freeAt) {
    return {
      ok: false,
      reason: `is reserved for the account that used it last, until ${new Date(freeAt).toISOString()}`,
      ...(current !== record ? { noticed: current } : {}),
    };
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
