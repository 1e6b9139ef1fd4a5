/**
 * The registry of online tunnels as the rest of the Worker sees it: the management API lists and reads
 * tunnels here; sessions add, remove and renew theirs. One TunnelRegistry object per account.
 */

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

function registry(env: Env, accountId: string) {
  return env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName(accountId));
}

/** Online tunnels of an account, newest first (ids sort by creation time). */
export async function listOnlineTunnels(env: Env, accountId: string): Promise<TunnelRecord[]> {
  return (await registry(env, accountId).list()) as TunnelRecord[];
}

export async function getOnlineTunnel(env: Env, accountId: string, id: string): Promise<TunnelRecord | undefined> {
  return ((await registry(env, accountId).get(id)) as TunnelRecord | null) ?? undefined;
}

export async function addOnlineTunnel(env: Env, accountId: string, sessionId: string, record: TunnelRecord, leaseMs: number): Promise<void> {
  await registry(env, accountId).add(sessionId, record, leaseMs);
}

/** Takes the listed tunnels of a session offline, or all of them; their host labels stay held for `graceMs`. */
export async function removeOnlineTunnels(env: Env, accountId: string, sessionId: string, tunnelIds?: readonly string[], graceMs = 0): Promise<void> {
  await registry(env, accountId).remove(sessionId, tunnelIds, graceMs);
}

/** Counts a host label against the account's quota; false when the account holds `limit` others already. */
export async function holdHost(env: Env, accountId: string, hold: { label: string; tunnelId: string; sessionId: string }, limit: number, leaseMs: number): Promise<boolean> {
  return registry(env, accountId).holdHost(hold.label, hold.tunnelId, hold.sessionId, limit, leaseMs);
}

export async function forgetHost(env: Env, accountId: string, label: string, tunnelId: string): Promise<void> {
  await registry(env, accountId).forgetHost(label, tunnelId);
}

export async function renewOnlineTunnels(env: Env, accountId: string, sessionId: string, leaseMs: number): Promise<void> {
  await registry(env, accountId).renew(sessionId, leaseMs);
}
