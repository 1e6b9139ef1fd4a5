/**
 * TunnelHost: one Durable Object per public host label, naming the tunnel that serves it. Public requests
 * resolve their host here (then go straight to the session); starting a tunnel claims its label under the
 * rules of host-claims.ts (owned by its account, with a grace period after the tunnel goes offline).
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { decideClaim, HOST_GRACE_MS, isExpired, releaseClaim, type HostClaim, type HostRecord } from "./host-claims.ts";

export type ClaimResult = { ok: true } | { ok: false; reason: string };

const RECORD_KEY = "host";

export class TunnelHost extends DurableObject<Env> {
  async claim(claim: HostClaim): Promise<ClaimResult> {
    const record = this.record();
    const online = record && record.releasedAt === undefined && record.claim.tunnelId !== claim.tunnelId ? await this.holderIsOnline(record.claim) : false;
    const decision = decideClaim(record, claim, () => online, Date.now());
    if (decision.record) this.save(decision.record);
    return decision.ok ? { ok: true } : { ok: false, reason: decision.reason };
  }

  /** Marks the host offline if `tunnelId` still holds it; its account keeps it for the grace period. */
  async release(tunnelId: string): Promise<void> {
    const record = this.record();
    const released = releaseClaim(record, tunnelId, Date.now());
    if (released && released !== record) this.save(released);
  }

  /** The claim of the tunnel serving this host right now, if any. */
  resolve(): HostClaim | null {
    const record = this.record();
    return record && record.releasedAt === undefined ? record.claim : null;
  }

  override async alarm(): Promise<void> {
    const record = this.record();
    if (record && isExpired(record, Date.now())) this.ctx.storage.kv.delete(RECORD_KEY);
  }

  private record(): HostRecord | undefined {
    return this.ctx.storage.kv.get<HostRecord>(RECORD_KEY);
  }

  private save(record: HostRecord): void {
    this.ctx.storage.kv.put(RECORD_KEY, record);
    // A released host is forgotten when its grace is over, so labels used once cost no storage forever.
    if (record.releasedAt !== undefined) void this.ctx.storage.setAlarm(record.releasedAt + HOST_GRACE_MS);
  }

  private async holderIsOnline(holder: HostClaim): Promise<boolean> {
    try {
      const session = this.env.TUNNEL_SESSION.get(this.env.TUNNEL_SESSION.idFromName(holder.sessionId));
      return await session.servesTunnel(holder.tunnelId);
    } catch {
      return false;
    }
  }
}
