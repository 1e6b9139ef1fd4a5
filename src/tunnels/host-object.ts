/**
 * TunnelHost: one Durable Object per public host label, naming the tunnel that serves it. Public requests
 * resolve their host here (then go straight to the session); starting a tunnel claims its label under the
 * rules of host-claims.ts (owned by its account, with a grace period after the tunnel goes offline).
 *
 * A Durable Object runs other calls while one awaits another object, so a claim that asks the holder's
 * session decides only on the record it reads after that answer, and only if the record is still the one it
 * asked about; otherwise it starts over. A refusal writes nothing but the release it noticed, onto that record.
 * A pool (host-claims.ts) is asked as one holder: online while any member's session serves its tunnel.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import {
  decideClaim,
  HOST_GRACE_MS,
  isExpired,
  membersOf,
  needsHolderCheck,
  releaseClaim,
  sameRecord,
  type ClaimDecision,
  type HostClaim,
  type HostRecord,
} from "./host-claims.ts";

/** `random`: the label stays one the edge chose at random (it needs no quota hold while offline). */
export type ClaimResult = { ok: true; random: boolean } | { ok: false; reason: string };

/** What the holder's session said: online, offline, or it could not be asked (that is no evidence of offline). */
type HolderState = "online" | "offline" | "unknown";

const RECORD_KEY = "host";
/** Decisions a claim may start over because the record changed while it asked the holder; then it gives up. */
export const MAX_CLAIM_ROUNDS = 4;

export class TunnelHost extends DurableObject<Env> {
  async claim(claim: HostClaim): Promise<ClaimResult> {
    for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
      const seen = this.record();
      if (!needsHolderCheck(seen, claim)) return this.settle(decideClaim(seen, claim, () => false, Date.now()));
      const holder = await this.holdersState(membersOf(seen));
      // Other claims and releases ran while this one waited: decide only on the record the answer was about.
      if (!sameRecord(seen, this.record())) continue;
      if (holder === "unknown") return { ok: false, reason: "is held by a tunnel whose session could not be asked; try again" };
      return this.settle(decideClaim(seen, claim, () => holder === "online", Date.now()));
    }
    return { ok: false, reason: "is being claimed by other tunnels at this moment; try again" };
  }

  /**
   * Takes `tunnelId` off the host if it still serves it. A pool member just leaves the pool; the last holder
   * frees the host at once (`free`, the tunnel was stopped on purpose) or starts its account's grace period
   * (its session ended).
   */
  async release(tunnelId: string, free = false): Promise<void> {
    const record = this.record();
    const next = releaseClaim(record, tunnelId, Date.now(), free);
    if (next === record) return;
    if (next) this.save(next);
    else this.ctx.storage.kv.delete(RECORD_KEY);
  }

  /**
   * A session renewing its tunnel: true while `tunnelId` serves the host (alone or in its pool), which is
   * marked online again if a claim had found its session unreachable; false when others hold it now.
   */
  reassert(tunnelId: string): boolean {
    const record = this.record();
    if (!record || !membersOf(record).some((member) => member.tunnelId === tunnelId)) return false;
    if (record.releasedAt !== undefined) this.save({ claim: record.claim });
    return true;
  }

  /** The claim of the tunnel serving this host right now (a pool's oldest member), if any. */
  resolve(): HostClaim | null {
    const record = this.record();
    return record && record.releasedAt === undefined ? record.claim : null;
  }

  /** Every tunnel serving this host right now: one, or the members of its pool; none while released. */
  serving(): HostClaim[] {
    const record = this.record();
    return record && record.releasedAt === undefined ? [...membersOf(record)] : [];
  }

  override async alarm(): Promise<void> {
    const record = this.record();
    if (record && isExpired(record, Date.now())) this.ctx.storage.kv.delete(RECORD_KEY);
  }

  private settle(decision: ClaimDecision): ClaimResult {
    if (decision.ok) {
      this.save(decision.record);
      return { ok: true, random: decision.record.claim.random === true };
    }
    if (decision.noticed) this.save(decision.noticed);
    return { ok: false, reason: decision.reason };
  }

  private record(): HostRecord | undefined {
    return this.ctx.storage.kv.get<HostRecord>(RECORD_KEY);
  }

  private save(record: HostRecord): void {
    this.ctx.storage.kv.put(RECORD_KEY, record);
    // A released host is forgotten when its grace is over, so labels used once cost no storage forever.
    if (record.releasedAt !== undefined) void this.ctx.storage.setAlarm(record.releasedAt + HOST_GRACE_MS);
  }

  /** Online while any holder's session serves its tunnel; unknown when none does and one could not be asked. */
  private async holdersState(holders: readonly HostClaim[]): Promise<HolderState> {
    const states = await Promise.all(holders.map((holder) => this.holderState(holder)));
    if (states.includes("online")) return "online";
    return states.includes("unknown") ? "unknown" : "offline";
  }

  private async holderState(holder: HostClaim): Promise<HolderState> {
    try {
      const session = this.env.TUNNEL_SESSION.get(this.env.TUNNEL_SESSION.idFromName(holder.sessionId));
      return (await session.servesTunnel(holder.tunnelId)) ? "online" : "offline";
    } catch {
      return "unknown";
    }
  }
}
