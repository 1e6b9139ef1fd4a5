/**
 * TunnelRegistry: one Durable Object per account holding its online tunnels. Sessions add and remove their
 * tunnels and renew a lease on every heartbeat; a tunnel whose lease ran out (its session vanished without
 * saying so, e.g. the edge process died) is not listed and is swept on the next write.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import type { TunnelRecord } from "./registry-client.ts";

const SCHEMA_VERSION = 1;

export class TunnelRegistry extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
    const version = sql.exec<{ value: number }>("SELECT value FROM meta WHERE key = 'schema'").toArray()[0]?.value ?? 0;
    if (version < SCHEMA_VERSION) {
      sql.exec(`CREATE TABLE IF NOT EXISTS tunnels (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        record TEXT NOT NULL,
        lease_until INTEGER NOT NULL
      )`);
      sql.exec("CREATE INDEX IF NOT EXISTS tunnels_by_session ON tunnels (session_id)");
      sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", SCHEMA_VERSION);
    }
  }

  /** Records an online tunnel of `sessionId`, leased for `leaseMs`. */
  add(sessionId: string, record: TunnelRecord, leaseMs: number): void {
    this.sweep();
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO tunnels (id, session_id, record, lease_until) VALUES (?, ?, ?, ?)",
      record.id,
      sessionId,
      JSON.stringify(record),
      Date.now() + leaseMs,
    );
  }

  /** Takes tunnels of `sessionId` offline: the listed ones, or all of them. */
  remove(sessionId: string, tunnelIds?: readonly string[]): number {
    const sql = this.ctx.storage.sql;
    if (!tunnelIds) return sql.exec("DELETE FROM tunnels WHERE session_id = ?", sessionId).rowsWritten;
    let removed = 0;
    for (const id of tunnelIds) removed += sql.exec("DELETE FROM tunnels WHERE session_id = ? AND id = ?", sessionId, id).rowsWritten;
    return removed;
  }

  /** Extends the lease of every tunnel of `sessionId`; answers how many it has. */
  renew(sessionId: string, leaseMs: number): number {
    return this.ctx.storage.sql.exec("UPDATE tunnels SET lease_until = ? WHERE session_id = ?", Date.now() + leaseMs, sessionId).rowsWritten;
  }

  /** Online tunnels, newest first (ids sort by creation time). */
  list(): TunnelRecord[] {
    return this.ctx.storage.sql
      .exec<{ record: string }>("SELECT record FROM tunnels WHERE lease_until > ? ORDER BY id DESC", Date.now())
      .toArray()
      .map((row) => JSON.parse(row.record) as TunnelRecord);
  }

  get(id: string): TunnelRecord | null {
    const row = this.ctx.storage.sql
      .exec<{ record: string }>("SELECT record FROM tunnels WHERE id = ? AND lease_until > ?", id, Date.now())
      .toArray()[0];
    return row ? (JSON.parse(row.record) as TunnelRecord) : null;
  }

  private sweep(): void {
    this.ctx.storage.sql.exec("DELETE FROM tunnels WHERE lease_until <= ?", Date.now());
  }
}
