/** The SQL schema of an account's store, as numbered migrations applied in order, each exactly once. */

import { migrateSchema } from "../../sqlite-migrations.ts";

/** Migration n (1-based) is `MIGRATIONS[n - 1]`. Append only: never edit or reorder an applied one. */
export const MIGRATIONS: readonly string[] = [
  // 1: bot users. Ids sort by creation time, so the primary key is also the "newest first" index.
  `CREATE TABLE bot_users (
     id TEXT PRIMARY KEY NOT NULL,
     name TEXT NOT NULL,
     active INTEGER NOT NULL,
     created_at TEXT NOT NULL
   ) WITHOUT ROWID;
   CREATE TABLE route_modules (
     edge_id TEXT NOT NULL,
     route_id TEXT NOT NULL,
     kind TEXT NOT NULL,
     config TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (edge_id, route_id, kind)
   ) WITHOUT ROWID;`,
  // 2: when the management API first showed each edge (route_id '') and route of policies/gateway.yaml:
  // their created_at, stable from then on (the config itself carries no dates).
  `CREATE TABLE edges_seen (
     edge_id TEXT NOT NULL,
     route_id TEXT NOT NULL,
     first_seen TEXT NOT NULL,
     PRIMARY KEY (edge_id, route_id)
   ) WITHOUT ROWID;`,
  // 3: rate-limit overrides. Ids sort by creation time (the list's order); one override per (scope, action, key).
  `CREATE TABLE rate_limit_overrides (
     id TEXT PRIMARY KEY NOT NULL,
     scope TEXT NOT NULL,
     action TEXT NOT NULL,
     bucket_key TEXT NOT NULL,
     windows TEXT NOT NULL,
     expires_ms INTEGER,
     description TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     revision INTEGER NOT NULL
   ) WITHOUT ROWID;
   CREATE UNIQUE INDEX rate_limit_overrides_by_key ON rate_limit_overrides (scope, action, bucket_key);`,
];

/** Brings the schema up to date (src/sqlite-migrations.ts); returns the version it is at. One transaction. */
export function migrate(storage: DurableObjectStorage): number {
  return migrateSchema(storage, MIGRATIONS);
}
