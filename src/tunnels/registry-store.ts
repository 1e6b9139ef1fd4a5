/**
 * The TunnelRegistry's rows: online sessions, their tunnels and the host labels the account holds, each leased
 * and renewed with its session. Plain functions over the object's SQLite storage, the time passed in; the object
 * (registry-object.ts) only hands its calls here.
 */

import { hasTable, type MigrationStep } from "../sqlite-migrations.ts";
import type { HoldResult, TunnelRecord, TunnelSessionPage, TunnelSessionRecord } from "./registry-client.ts";

/**
 * Host labels the account holds, one row per label and tunnel: the members of an endpoint pool each hold
 * their label (it is counted once), so one member leaving leaves it counted for the others.
 */
const HELD_HOSTS_TABLE = `CREATE TABLE held_hosts (
  label TEXT NOT NULL,
  tunnel_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  held_until INTEGER NOT NULL,
  PRIMARY KEY (label, tunnel_id)
)`;

/** The registry's schema, step n bringing it to version n (src/sqlite-migrations.ts). Append only. */
export const REGISTRY_MIGRATIONS: readonly MigrationStep[] = [
  // 1: online tunnels, leased and renewed with their session.
  `CREATE TABLE IF NOT EXISTS tunnels (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, record TEXT NOT NULL, lease_until INTEGER NOT NULL);
   CREATE INDEX IF NOT EXISTS tunnels_by_session ON tunnels (session_id);`,
  // 2: host labels the account holds, counted against its quota until held_until: while their tunnel is online
  // (leased and renewed like the tunnel), then for the grace period after it went offline. One row per label.
  `CREATE TABLE IF NOT EXISTS held_hosts (label TEXT PRIMARY KEY, tunnel_id TEXT NOT NULL, session_id TEXT NOT NULL, held_until INTEGER NOT NULL);
   CREATE INDEX IF NOT EXISTS held_hosts_by_session ON held_hosts (session_id);`,
  // 3: online tunnel sessions (agents that said hello), leased and renewed like their tunnels.
  "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, record TEXT NOT NULL, lease_until INTEGER NOT NULL)",
  // 4: endpoint pools: a label has a row per tunnel holding it; the rows of step 2 kept under the new key.
  `${HELD_HOSTS_TABLE.replace("held_hosts", "held_hosts_v4")};
   INSERT INTO held_hosts_v4 SELECT label, tunnel_id, session_id, held_until FROM held_hosts;
   DROP TABLE held_hosts;
   ALTER TABLE held_hosts_v4 RENAME TO held_hosts;
   CREATE INDEX IF NOT EXISTS held_hosts_by_session ON held_hosts (session_id);`,
];

/** The version a registry recorded before src/sqlite-migrations.ts: a `meta` row 'schema' (versions 1 to 4). */
export function metaSchemaVersion(sql: SqlStorage): number | undefined {
  if (!hasTable(sql, "meta")) return undefined;
  return sql.exec<{ value: number }>("SELECT value FROM meta WHERE key = 'schema'").toArray()[0]?.value;
}

/** Records (or updates) an online tunnel session, leased for `leaseMs` and renewed with its tunnels. */
export function addSession(sql: SqlStorage, now: number, record: TunnelSessionRecord, leaseMs: number): void {
  sql.exec("DELETE FROM sessions WHERE lease_until <= ?", now);
  sql.exec("INSERT OR REPLACE INTO sessions (id, record, lease_until) VALUES (?, ?, ?)", record.id, JSON.stringify(record), now + leaseMs);
}

/**
 * A page of online sessions, newest first: those with an id below `beforeId`, at most `limit`. Keyset on
 * the primary key, so a page reads at most `limit + 1` rows however many sessions there are.
 */
export function listSessions(sql: SqlStorage, now: number, beforeId: string | undefined, limit: number): TunnelSessionPage {
  const rows = sql
    .exec<{ record: string }>(
      "SELECT record FROM sessions WHERE id < ? AND lease_until > ? ORDER BY id DESC LIMIT ?",
      beforeId ?? "\u{10FFFF}", // above every id: ids are ASCII, compared as UTF-8 bytes
      now,
      limit + 1,
    )
    .toArray();
  return { items: rows.slice(0, limit).map((row) => JSON.parse(row.record) as TunnelSessionRecord), hasMore: rows.length > limit };
}

/** Forgets a session record only (its tunnels and held hosts are left as they are). */
export function removeSession(sql: SqlStorage, id: string): void {
  sql.exec("DELETE FROM sessions WHERE id = ?", id);
}

export function getSession(sql: SqlStorage, now: number, id: string): TunnelSessionRecord | null {
  const row = sql.exec<{ record: string }>("SELECT record FROM sessions WHERE id = ? AND lease_until > ?", id, now).toArray()[0];
  return row ? (JSON.parse(row.record) as TunnelSessionRecord) : null;
}

/**
 * Records an online tunnel of `sessionId`, leased for `leaseMs`; its host `label`, now claimed, counts for
 * this tunnel from here on, in place of earlier tunnels of the account that held it and are offline now
 * (online ones are members of its pool and keep their rows).
 */
export function addTunnel(sql: SqlStorage, now: number, sessionId: string, record: TunnelRecord, leaseMs: number, label?: string): void {
  sweep(sql, now);
  if (label !== undefined) {
    sql.exec(
      "DELETE FROM held_hosts WHERE label = ? AND tunnel_id != ? AND tunnel_id NOT IN (SELECT id FROM tunnels WHERE lease_until > ?)",
      label,
      record.id,
      now,
    );
    sql.exec("INSERT OR REPLACE INTO held_hosts (label, tunnel_id, session_id, held_until) VALUES (?, ?, ?, ?)", label, record.id, sessionId, now + leaseMs);
  }
  sql.exec(
    "INSERT OR REPLACE INTO tunnels (id, session_id, record, lease_until) VALUES (?, ?, ?, ?)",
    record.id,
    sessionId,
    JSON.stringify(record),
    now + leaseMs,
  );
}

/**
 * Takes tunnels of `sessionId` offline: the listed ones, or all of them together with the session itself
 * (the session ended). Their host labels stop counting against the account's quota at once, except those of
 * `reservedTunnelIds`, which stay counted for `graceMs` (the time only this account may claim them again).
 */
export function removeTunnels(
  sql: SqlStorage,
  now: number,
  sessionId: string,
  tunnelIds: readonly string[] | undefined,
  reservedTunnelIds: readonly string[],
  graceMs: number,
): number {
  const ids =
    tunnelIds ??
    sql
      .exec<{ tunnel_id: string }>("SELECT tunnel_id FROM held_hosts WHERE session_id = ?", sessionId)
      .toArray()
      .map((row) => row.tunnel_id);
  const reserved = new Set(reservedTunnelIds);
  for (const id of ids) {
    // Deleted, not expired: the session's renewals extend every row it still has.
    if (reserved.has(id)) sql.exec("UPDATE held_hosts SET held_until = ? WHERE session_id = ? AND tunnel_id = ?", now + graceMs, sessionId, id);
    else sql.exec("DELETE FROM held_hosts WHERE session_id = ? AND tunnel_id = ?", sessionId, id);
  }
  if (!tunnelIds) {
    sql.exec("DELETE FROM sessions WHERE id = ?", sessionId);
    return sql.exec("DELETE FROM tunnels WHERE session_id = ?", sessionId).rowsWritten;
  }
  let removed = 0;
  for (const id of tunnelIds) removed += sql.exec("DELETE FROM tunnels WHERE session_id = ? AND id = ?", sessionId, id).rowsWritten;
  return removed;
}

/** Extends the lease of the session, its tunnels and held hosts; answers how many tunnels it has. */
export function renew(sql: SqlStorage, now: number, sessionId: string, leaseMs: number): number {
  sql.exec("UPDATE sessions SET lease_until = ? WHERE id = ?", now + leaseMs, sessionId);
  sql.exec("UPDATE held_hosts SET held_until = ? WHERE session_id = ?", now + leaseMs, sessionId);
  return sql.exec("UPDATE tunnels SET lease_until = ? WHERE session_id = ?", now + leaseMs, sessionId).rowsWritten;
}

/** Online tunnels, newest first (ids sort by creation time). */
export function listTunnels(sql: SqlStorage, now: number): TunnelRecord[] {
  return sql
    .exec<{ record: string }>("SELECT record FROM tunnels WHERE lease_until > ? ORDER BY id DESC", now)
    .toArray()
    .map((row) => JSON.parse(row.record) as TunnelRecord);
}

export function getTunnel(sql: SqlStorage, now: number, id: string): TunnelRecord | null {
  const row = sql.exec<{ record: string }>("SELECT record FROM tunnels WHERE id = ? AND lease_until > ?", id, now).toArray()[0];
  return row ? (JSON.parse(row.record) as TunnelRecord) : null;
}

/**
 * Counts `label` as held by the account for a tunnel of `sessionId` (leased for `leaseMs`, renewed with the
 * session), unless the account already holds `limit` other labels; then says what they are and when the
 * first one held for a tunnel that went offline frees up.
 */
export function holdHost(sql: SqlStorage, now: number, label: string, tunnelId: string, sessionId: string, limit: number, leaseMs: number): HoldResult {
  sql.exec("DELETE FROM held_hosts WHERE held_until <= ?", now);
  // Already counted (for a tunnel of the account that holds it, online or in its grace): a claim that fails
  // must not take the count away from that tunnel, so the row moves only once the claim succeeded (`addTunnel`).
  if (sql.exec("SELECT 1 FROM held_hosts WHERE label = ?", label).toArray().length > 0) return { ok: true };
  const others = sql.exec<{ n: number }>("SELECT COUNT(DISTINCT label) AS n FROM held_hosts WHERE label != ?", label).one().n;
  if (others < limit) {
    sql.exec("INSERT INTO held_hosts (label, tunnel_id, session_id, held_until) VALUES (?, ?, ?, ?)", label, tunnelId, sessionId, now + leaseMs);
    return { ok: true };
  }
  // Labels none of whose tunnels is online, and when each frees up (its last row's end).
  const offline = sql
    .exec<{ n: number; first: number | null }>(
      `SELECT COUNT(*) AS n, MIN(until) AS first FROM (
         SELECT MAX(held_until) AS until FROM held_hosts WHERE label != ? GROUP BY label
         HAVING SUM(tunnel_id IN (SELECT id FROM tunnels WHERE lease_until > ?)) = 0
       )`,
      label,
      now,
    )
    .one();
  return { ok: false, held: others, offline: offline.n, ...(offline.first !== null ? { freesAt: offline.first } : {}) };
}

/** Forgets a hold whose claim did not go through. */
export function forgetHost(sql: SqlStorage, label: string, tunnelId: string): void {
  sql.exec("DELETE FROM held_hosts WHERE label = ? AND tunnel_id = ?", label, tunnelId);
}

function sweep(sql: SqlStorage, now: number): void {
  sql.exec("DELETE FROM tunnels WHERE lease_until <= ?", now);
  sql.exec("DELETE FROM sessions WHERE lease_until <= ?", now);
}
