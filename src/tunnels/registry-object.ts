/**
 * TunnelRegistry: one Durable Object per account holding its online tunnel sessions and tunnels. Sessions
 * record themselves once the agent said hello, add and remove their tunnels, and renew a lease on every
 * heartbeat; a session or tunnel whose lease ran out (its session vanished without saying so, e.g. the edge
 * process died) is not listed and is swept on the next write. A thin shell: the rows are registry-store.ts's.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { migrateSchema } from "../sqlite-migrations.ts";
import type { HoldResult, TunnelRecord, TunnelSessionPage, TunnelSessionRecord } from "./registry-client.ts";
import * as rows from "./registry-store.ts";

export class TunnelRegistry extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    migrateSchema(ctx.storage, rows.REGISTRY_MIGRATIONS, { legacyVersion: rows.metaSchemaVersion });
  }

  addSession(record: TunnelSessionRecord, leaseMs: number): void {
    rows.addSession(this.sql, Date.now(), record, leaseMs);
  }

  listSessions(beforeId: string | undefined, limit: number): TunnelSessionPage {
    return rows.listSessions(this.sql, Date.now(), beforeId, limit);
  }

  removeSession(id: string): void {
    rows.removeSession(this.sql, id);
  }

  getSession(id: string): TunnelSessionRecord | null {
    return rows.getSession(this.sql, Date.now(), id);
  }

  add(sessionId: string, record: TunnelRecord, leaseMs: number, label?: string): void {
    rows.addTunnel(this.sql, Date.now(), sessionId, record, leaseMs, label);
  }

  remove(sessionId: string, tunnelIds?: readonly string[], reservedTunnelIds: readonly string[] = [], graceMs = 0): number {
    return rows.removeTunnels(this.sql, Date.now(), sessionId, tunnelIds, reservedTunnelIds, graceMs);
  }

  renew(sessionId: string, leaseMs: number): number {
    return rows.renew(this.sql, Date.now(), sessionId, leaseMs);
  }

  list(): TunnelRecord[] {
    return rows.listTunnels(this.sql, Date.now());
  }

  get(id: string): TunnelRecord | null {
    return rows.getTunnel(this.sql, Date.now(), id);
  }

  holdHost(label: string, tunnelId: string, sessionId: string, limit: number, leaseMs: number): HoldResult {
    return rows.holdHost(this.sql, Date.now(), label, tunnelId, sessionId, limit, leaseMs);
  }

  forgetHost(label: string, tunnelId: string): void {
    rows.forgetHost(this.sql, label, tunnelId);
  }
}
