// PLACEHOLDER interface until tunnels land (being written now); the implementation is replaced before commit.
import type { Env } from "../env.ts";

/** An online tunnel as the management API shows it (fields that do not apply are omitted). */
export interface TunnelRecord {
  id: string;
  public_url?: string;
  started_at: string;
  metadata?: string;
  proto?: string;
  region: string;
  tunnel_session: { id: string };
  endpoint?: { id: string };
  labels?: Record<string, string>;
  backends?: Array<{ id: string }>;
  forwards_to?: string;
}

/** Online tunnels of an account, newest first (ids sort by creation time). */
export async function listOnlineTunnels(_env: Env, _accountId: string): Promise<TunnelRecord[]> {
  return [];
}

export async function getOnlineTunnel(_env: Env, _accountId: string, _id: string): Promise<TunnelRecord | undefined> {
  return undefined;
}
