/**
 * The registry of online tunnel sessions and tunnels as the rest of the Worker sees it: the management API
 * lists and reads them here; sessions record themselves and add, remove and renew their tunnels. One
 * TunnelRegistry object per account.
 */

import type { Env } from "../env.ts";
import { rfc3339 } from "../time.ts";
import { PROTOCOL_VERSION, type FrameOf } from "../relay/index.ts";

/** A session's `transport`, in the form of the reference API's `ngrok/v2`. */
export const SESSION_TRANSPORT = `tollgate/v${PROTOCOL_VERSION}`;

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
  /** The tunnel shares its public URL with the account's other pooled tunnels (each listed on its own). */
  pooling_enabled?: boolean;
  labels?: Record<string, string>;
  backends?: Array<{ id: string }>;
  forwards_to?: string;
}

/** An online tunnel session (an agent that said hello) as the management API shows it. */
export interface TunnelSessionRecord {
  id: string;
  /** What the agent said in hello (at most 64 characters). */
  agent_version: string;
  /** The address the agent connected from (at most 64 characters). */
  ip: string;
  /** What the agent said in hello (at most 64 characters), `""` when it did not say. */
  os: string;
  region: string;
  started_at: string;
  /** The agent's configured metadata (at most 4096 characters), `""` when none. */
  metadata: string;
  transport: string;
  /** The API key the agent authenticated with, by its public id (`cr_…`). */
  credential: { id: string };
}

/** The registry record of a session, from what the edge knows of it and what the agent said in hello. */
export function tunnelSessionRecord(
  session: { sessionId: string; region: string; clientIp: string; credentialId: string },
  connectedAt: number,
  hello: Pick<FrameOf<"hello">, "agent_version" | "os" | "metadata">,
): TunnelSessionRecord {
  return {
    id: session.sessionId,
    agent_version: hello.agent_version,
    ip: session.clientIp,
    os: hello.os ?? "",
    region: session.region,
    started_at: rfc3339(new Date(connectedAt)),
    metadata: hello.metadata ?? "",
    transport: SESSION_TRANSPORT,
    credential: { id: session.credentialId },
  };
}

export interface TunnelSessionPage {
  readonly items: TunnelSessionRecord[];
  readonly hasMore: boolean;
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

/** Lists an online tunnel; its host `label`, if any, counts against the account's quota for it from now on. */
export async function addOnlineTunnel(env: Env, accountId: string, sessionId: string, record: TunnelRecord, leaseMs: number, label?: string): Promise<void> {
  await registry(env, accountId).add(sessionId, record, leaseMs, label);
}

/**
 * Takes the listed tunnels of a session offline, or all of them and the session record (the session
 * ended); the host labels of `reservedTunnelIds` stay held for `graceMs`, the others are released at once.
 */
export async function removeOnlineTunnels(
  env: Env,
  accountId: string,
  sessionId: string,
  tunnelIds?: readonly string[],
  reservedTunnelIds: readonly string[] = [],
  graceMs = 0,
): Promise<void> {
  await registry(env, accountId).remove(sessionId, tunnelIds, reservedTunnelIds, graceMs);
}

/**
 * A host hold: granted, or refused with the labels the account holds, how many of them are kept for tunnels
 * that went offline, and when the first of those frees up (absent when all are online).
 */
export type HoldResult = { readonly ok: true } | { readonly ok: false; readonly held: number; readonly offline: number; readonly freesAt?: number };

/** Counts a host label against the account's quota; refused when the account holds `limit` others already. */
export async function holdHost(
  env: Env,
  accountId: string,
  hold: { label: string; tunnelId: string; sessionId: string },
  limit: number,
  leaseMs: number,
): Promise<HoldResult> {
  return (await registry(env, accountId).holdHost(hold.label, hold.tunnelId, hold.sessionId, limit, leaseMs)) as HoldResult;
}

export async function forgetHost(env: Env, accountId: string, label: string, tunnelId: string): Promise<void> {
  await registry(env, accountId).forgetHost(label, tunnelId);
}

export async function renewOnlineTunnels(env: Env, accountId: string, sessionId: string, leaseMs: number): Promise<void> {
  await registry(env, accountId).renew(sessionId, leaseMs);
}

/** Records an online tunnel session (again, on a repeated hello), leased like its tunnels. */
export async function addTunnelSession(env: Env, accountId: string, record: TunnelSessionRecord, leaseMs: number): Promise<void> {
  await registry(env, accountId).addSession(record, leaseMs);
}

/** Forgets a session record that was added after its session ended. */
export async function removeTunnelSession(env: Env, accountId: string, id: string): Promise<void> {
  await registry(env, accountId).removeSession(id);
}

/** A page of an account's online tunnel sessions, newest first (before `beforeId`, at most `limit`). */
export async function listTunnelSessions(env: Env, accountId: string, beforeId: string | undefined, limit: number): Promise<TunnelSessionPage> {
  return (await registry(env, accountId).listSessions(beforeId, limit)) as TunnelSessionPage;
}

export async function getTunnelSession(env: Env, accountId: string, id: string): Promise<TunnelSessionRecord | undefined> {
  return ((await registry(env, accountId).getSession(id)) as TunnelSessionRecord | null) ?? undefined;
}
