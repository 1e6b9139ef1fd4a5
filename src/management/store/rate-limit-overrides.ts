/**
 * Rate-limit overrides in an account's SQLite database: plain functions over `SqlStorage`. One row per
 * (scope, action, bucket key or pattern); the limits are the windows as the API received them (JSON). The
 * bounds per account and per action are checked here, inside the object, so concurrent creates cannot pass them.
 */

import { newId } from "../../ids.ts";
import type { LimitOverride } from "../../limiter/override-match.ts";
import { ruleOf, type WindowDocument, windowLabel } from "../../policy/actions/rate-limit-windows.ts";
import { rfc3339 } from "../../time.ts";
import type { Page, PageRequest } from "../pagination.ts";

export const OVERRIDE_ID_PREFIX = "rlo";
/** Overrides one account may hold, and one action of one route or tunnel (docs/security.md). */
export const MAX_OVERRIDES_PER_ACCOUNT = 1_000;
export const MAX_OVERRIDES_PER_ACTION = 100;

/** What the API stores: the target as its bucket scope (`route:<edge>/<route>`), the rest as validated. */
export interface OverrideInput {
  readonly scope: string;
  readonly action: string;
  readonly bucket_key: string;
  readonly windows: readonly WindowDocument[];
  /** Epoch milliseconds, or null: never expires. */
  readonly expires_ms: number | null;
  readonly description: string;
}

export interface OverrideRecord extends OverrideInput {
  readonly id: string;
  readonly created_at: string;
  readonly updated_at: string;
  /** Counts updates: the version the gateway's copies compare. */
  readonly revision: number;
}

export type OverridePatch = Partial<Pick<OverrideInput, "windows" | "expires_ms" | "description">>;

/** Why a create or update was refused (nothing was written); the API turns it into a 400. */
export interface OverrideRefusal {
  readonly refused: string;
  readonly field: string;
}

type Row = {
  id: string;
  scope: string;
  action: string;
  bucket_key: string;
  windows: string;
  expires_ms: number | null;
  description: string;
  created_at: string;
  updated_at: string;
  revision: number;
};

const COLUMNS = "id, scope, action, bucket_key, windows, expires_ms, description, created_at, updated_at, revision";

function fromRow(row: Row): OverrideRecord {
  return { ...row, windows: JSON.parse(row.windows) as WindowDocument[] };
}

/** Expired overrides apply to nothing: they are removed before counting against the bounds. */
function removeExpired(sql: SqlStorage, now: number): void {
  sql.exec("DELETE FROM rate_limit_overrides WHERE expires_ms IS NOT NULL AND expires_ms <= ?", now);
}

export function createOverride(sql: SqlStorage, input: OverrideInput, now: number = Date.now()): OverrideRecord | OverrideRefusal {
  removeExpired(sql, now);
  const total = sql.exec<{ n: number }>("SELECT count(*) AS n FROM rate_limit_overrides").one().n;
  if (total >= MAX_OVERRIDES_PER_ACCOUNT) {
    return { refused: `An account holds at most ${MAX_OVERRIDES_PER_ACCOUNT} rate-limit overrides; delete some first.`, field: "bucket_key" };
  }
  const ofAction = sql.exec<{ n: number }>("SELECT count(*) AS n FROM rate_limit_overrides WHERE scope = ? AND action = ?", input.scope, input.action).one().n;
  if (ofAction >= MAX_OVERRIDES_PER_ACTION) {
    return { refused: `One rate-limit action holds at most ${MAX_OVERRIDES_PER_ACTION} overrides; delete some first.`, field: "action" };
  }
  const taken = sql
    .exec<{ id: string }>("SELECT id FROM rate_limit_overrides WHERE scope = ? AND action = ? AND bucket_key = ?", input.scope, input.action, input.bucket_key)
    .toArray()[0];
  if (taken) return { refused: `The override '${taken.id}' already has this bucket_key for this action; update it instead.`, field: "bucket_key" };
  const stamp = rfc3339(new Date(now));
  const record: OverrideRecord = { ...input, id: newId(OVERRIDE_ID_PREFIX, now), created_at: stamp, updated_at: stamp, revision: 1 };
  sql.exec(
    `INSERT INTO rate_limit_overrides (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    record.id,
    record.scope,
    record.action,
    record.bucket_key,
    JSON.stringify(record.windows),
    record.expires_ms,
    record.description,
    record.created_at,
    record.updated_at,
    record.revision,
  );
  return record;
}

export function getOverride(sql: SqlStorage, id: string): OverrideRecord | undefined {
  const row = sql.exec<Row>(`SELECT ${COLUMNS} FROM rate_limit_overrides WHERE id = ?`, id).toArray()[0];
  return row && fromRow(row);
}

/** Newest first, by a keyset on the primary key: a page reads at most `limit + 1` rows. */
export function listOverrides(sql: SqlStorage, request: PageRequest): Page<OverrideRecord> {
  const rows = sql
    .exec<Row>(
      `SELECT ${COLUMNS} FROM rate_limit_overrides WHERE id < ? ORDER BY id DESC LIMIT ?`,
      request.beforeId ?? `${OVERRIDE_ID_PREFIX}_~`,
      request.limit + 1,
    )
    .toArray();
  return { items: rows.slice(0, request.limit).map(fromRow), hasMore: rows.length > request.limit };
}

export function updateOverride(sql: SqlStorage, id: string, patch: OverridePatch, now: number = Date.now()): OverrideRecord | undefined {
  const current = getOverride(sql, id);
  if (!current) return undefined;
  const next: OverrideRecord = {
    ...current,
    windows: patch.windows ?? current.windows,
    expires_ms: patch.expires_ms === undefined ? current.expires_ms : patch.expires_ms,
    description: patch.description ?? current.description,
    updated_at: rfc3339(new Date(now)),
    revision: current.revision + 1,
  };
  sql.exec(
    "UPDATE rate_limit_overrides SET windows = ?, expires_ms = ?, description = ?, updated_at = ?, revision = ? WHERE id = ?",
    JSON.stringify(next.windows),
    next.expires_ms,
    next.description,
    next.updated_at,
    next.revision,
    id,
  );
  return next;
}

export function deleteOverride(sql: SqlStorage, id: string): boolean {
  return sql.exec("DELETE FROM rate_limit_overrides WHERE id = ?", id).rowsWritten > 0;
}

/**
 * What the gateway applies: every override not expired at `now`, as limiter rules. Read about once every 250 ms
 * per isolate that serves the account's traffic, so it carries neither descriptions nor dates.
 */
export function liveOverrides(sql: SqlStorage, now: number = Date.now()): LimitOverride[] {
  const rows = sql
    .exec<Pick<Row, "id" | "scope" | "action" | "bucket_key" | "windows" | "expires_ms" | "revision">>(
      "SELECT id, scope, action, bucket_key, windows, expires_ms, revision FROM rate_limit_overrides WHERE expires_ms IS NULL OR expires_ms > ?",
      now,
    )
    .toArray();
  return rows.map((row) => {
    const windows = JSON.parse(row.windows) as WindowDocument[];
    const override: LimitOverride = {
      id: row.id,
      scope: row.scope,
      action: row.action,
      key: row.bucket_key,
      windows: windows.map(ruleOf),
      labels: windows.map(windowLabel),
      version: String(row.revision),
    };
    return row.expires_ms === null ? override : { ...override, expiresAt: row.expires_ms };
  });
}
