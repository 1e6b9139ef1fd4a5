/**
 * Who may serve a public host label, as plain values with the clock passed in. A label belongs to the
 * account whose tunnel claimed it: while that tunnel is online nobody else gets it, and after it goes
 * offline (its agent disconnected, or the edge was redeployed) only the same account may claim it again
 * for HOST_GRACE_MS, so another account cannot take over a URL in the seconds before the owner's agent
 * reconnects. After the grace period the label is free. A tunnel stopped on purpose frees its label at once.
 *
 * Endpoint pools: tunnels of one account that all opted in (`pooled`) share a label, up to MAX_POOL_MEMBERS;
 * a member leaving takes only itself out, and the label is released (or freed) when the last one leaves. A
 * tunnel that did not opt in never joins a pool and never shares its label, and another account's tunnel
 * meets a pool exactly as it meets a single holder.
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
  /** The tunnel opted in to endpoint pooling (`pooling_enabled`): it shares its label with the account's other pooled tunnels. */
  readonly pooled?: boolean;
}

/**
 * What a host object keeps: the last claim, and when its tunnel went offline (absent while online). A pool
 * keeps its oldest live member in `claim` and the others in `pool`; a released record has no `pool`.
 */
export interface HostRecord {
  readonly claim: HostClaim;
  readonly pool?: readonly HostClaim[];
  readonly releasedAt?: number;
}

/** How long a label stays reserved for its account after its tunnel went offline. */
export const HOST_GRACE_MS = 10 * 60_000;
/** Host labels one account may hold at once: its online endpoint tunnels plus those still in their grace period. */
export const MAX_HOSTS_PER_ACCOUNT = 50;
/**
 * Tunnels one pooled label takes at once. The host record and each isolate's cached copy of it carry every
 * member's traffic policy (up to 16 KiB of JSON each), so this keeps a pool's record within 128 KiB.
 */
export const MAX_POOL_MEMBERS = 8;

/**
 * `noticed`: on a refusal, the record with the holder marked released because it was found offline; the
 * caller saves it only onto the very record the decision read (nothing else is written on a refusal).
 */
export type ClaimDecision = { readonly ok: true; readonly record: HostRecord } | { readonly ok: false; readonly reason: string; readonly noticed?: HostRecord };

/** Whether deciding `claim` needs to ask the current holder's session if it is still online. */
export function needsHolderCheck(record: HostRecord | undefined, claim: HostClaim): record is HostRecord {
  return record !== undefined && record.releasedAt === undefined && !isMember(record, claim.tunnelId) && !joinsPool(record, claim);
}

/** True when two reads of a host's record name the same holders in the same state. */
export function sameRecord(a: HostRecord | undefined, b: HostRecord | undefined): boolean {
  if (!a || !b) return a === b;
  const ids = (record: HostRecord) =>
    membersOf(record)
      .map((member) => member.tunnelId)
      .join(" ");
  return ids(a) === ids(b) && a.releasedAt === b.releasedAt;
}

/** Every tunnel the record names as serving the host: its claim, then the rest of its pool. */
export function membersOf(record: HostRecord): readonly HostClaim[] {
  return record.pool?.length ? [record.claim, ...record.pool] : [record.claim];
}

function isMember(record: HostRecord, tunnelId: string): boolean {
  return membersOf(record).some((member) => member.tunnelId === tunnelId);
}

/** An online pool that `claim` may join: it opted in, and so did every member, all of its own account. */
function joinsPool(record: HostRecord, claim: HostClaim): boolean {
  return (
    record.releasedAt === undefined &&
    claim.pooled === true &&
    membersOf(record).every((member) => member.pooled === true && member.accountId === claim.accountId)
  );
}

/**
 * Decides a claim. `holderOnline` says whether the current holder's session still serves its tunnel (only
 * asked when needsHolderCheck says so). A holder found offline counts as released now, so its account's
 * grace starts when the edge first notices. The same account taking its label back keeps it random if it was.
 */
export function decideClaim(record: HostRecord | undefined, claim: HostClaim, holderOnline: () => boolean, now: number): ClaimDecision {
  if (!record) return { ok: true, record: { claim } };
  if (isMember(record, claim.tunnelId)) return { ok: true, record: replaceMember(record, claim) };
  if (joinsPool(record, claim)) {
    const members = membersOf(record);
    if (members.length >= MAX_POOL_MEMBERS) return { ok: false, reason: `already has ${members.length} tunnels in its pool, the most a pool takes` };
    // A label the edge chose at random stays random for every member (it needs no quota hold while offline).
    return { ok: true, record: { claim: record.claim, pool: [...(record.pool ?? []), record.claim.random ? { ...claim, random: true } : claim] } };
  }
  let current = record;
  if (current.releasedAt === undefined) {
    if (holderOnline()) return { ok: false, reason: inUseReason(record, claim) };
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

/**
 * Why an online holder keeps the label. Only the holder's own account learns that pooling is what it lacks:
 * to another account, a pool is refused in the same words as any tunnel.
 */
function inUseReason(record: HostRecord, claim: HostClaim): string {
  if (record.claim.accountId !== claim.accountId) return "is in use by another online tunnel";
  if (claim.pooled) return "is in use by another online tunnel of this account that did not enable pooling; start every tunnel of the URL with pooling enabled";
  if (record.claim.pooled) return "is in use by a pool of this account's tunnels; start this tunnel with pooling enabled to join it";
  return "is in use by another online tunnel";
}

/** The record with `claim` in the place of the member of the same tunnel (its session asking again). */
function replaceMember(record: HostRecord, claim: HostClaim): HostRecord {
  if (record.claim.tunnelId === claim.tunnelId && !record.pool?.length) return { claim };
  const swap = (member: HostClaim) => (member.tunnelId === claim.tunnelId ? claim : member);
  return { claim: swap(record.claim), pool: record.pool!.map(swap) };
}

/**
 * The record after `tunnelId` went offline. A pool member leaves the pool and the others keep serving; the
 * last holder's record is released (its account's grace starts), or, when `free` (stopped on purpose),
 * deleted (undefined). Unchanged (the very object) when `tunnelId` does not serve the host.
 */
export function releaseClaim(record: HostRecord | undefined, tunnelId: string, now: number, free = false): HostRecord | undefined {
  if (!record || !isMember(record, tunnelId)) return record;
  const rest = membersOf(record).filter((member) => member.tunnelId !== tunnelId);
  if (rest.length > 0) return rest.length === 1 ? { claim: rest[0] } : { claim: rest[0], pool: rest.slice(1) };
  if (free) return undefined;
  return record.releasedAt !== undefined ? record : { claim: record.claim, releasedAt: now };
}

/** True once a released record's grace is over and it can be forgotten. */
export function isExpired(record: HostRecord, now: number): boolean {
  return record.releasedAt !== undefined && now >= record.releasedAt + HOST_GRACE_MS;
}
