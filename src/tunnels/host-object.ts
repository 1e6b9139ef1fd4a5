/**
 * TunnelHost: one Durable Object per public host label, naming the tunnel that serves it. Public requests
 * resolve their host here (then go straight to the session); starting a tunnel claims its label, which
 * succeeds when the label is free or its holder's session no longer has that tunnel.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";

/** Who serves a host: enough for the Worker to relay without asking anyone else. */
export interface HostClaim {
  readonly accountId: string;
  readonly sessionId: string;
  readonly tunnelId: string;
  /** The tunnel's traffic policy document (validated when the tunnel started). */
  readonly trafficPolicy?: unknown;
}

export type ClaimResult = { ok: true } | { ok: false; reason: string };

const CLAIM_KEY = "claim";

export class TunnelHost extends DurableObject<Env> {
  async claim(claim: HostClaim): Promise<ClaimResult> {
    const holder = this.ctx.storage.kv.get<HostClaim>(CLAIM_KEY);
    if (holder && holder.tunnelId !== claim.tunnelId && (await this.holderIsOnline(holder))) {
      return { ok: false, reason: "in use by another online tunnel" };
    }
    this.ctx.storage.kv.put(CLAIM_KEY, claim);
    return { ok: true };
  }

  /** Frees the host if `tunnelId` still holds it. */
  release(tunnelId: string): void {
    if (this.ctx.storage.kv.get<HostClaim>(CLAIM_KEY)?.tunnelId === tunnelId) this.ctx.storage.kv.delete(CLAIM_KEY);
  }

  resolve(): HostClaim | null {
    return this.ctx.storage.kv.get<HostClaim>(CLAIM_KEY) ?? null;
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
