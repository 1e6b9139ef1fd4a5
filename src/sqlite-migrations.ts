/**
 * Schema migrations of every SQLite-backed Durable Object: numbered steps applied in order, each exactly once,
 * all pending ones in one transaction, each recorded as a row of `schema_migrations` (the AccountStore's form
 * since its first release, so its stored data opens unchanged).
 */

/** Step n (1-based) is `steps[n - 1]`: SQL text, or a function for what SQL text alone cannot say. Append only. */
export type MigrationStep = string | ((sql: SqlStorage) => void);

export interface MigrationOptions {
  /**
   * The version an object's storage is at by an older way of tracking it, read when `schema_migrations` has no
   * row yet (0 or undefined: none). Its steps count as applied; the later ones run.
   */
  readonly legacyVersion?: (sql: SqlStorage) => number | undefined;
  /** When each step is recorded as applied (epoch ms). */
  readonly now?: () => number;
}

/** Brings the schema of `storage` up to `steps.length`, in one transaction; returns that version. */
export function migrateSchema(storage: DurableObjectStorage, steps: readonly MigrationStep[], options: MigrationOptions = {}): number {
  const now = options.now ?? Date.now;
  return storage.transactionSync(() => {
    const sql = storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY NOT NULL, applied_at TEXT NOT NULL)");
    let current = sql.exec<{ version: number | null }>("SELECT max(version) AS version FROM schema_migrations").one().version ?? 0;
    if (current === 0 && options.legacyVersion) {
      current = Math.min(options.legacyVersion(sql) ?? 0, steps.length);
      for (let version = 1; version <= current; version++) record(sql, version, now());
    }
    for (let version = current + 1; version <= steps.length; version++) {
      const step = steps[version - 1]!;
      if (typeof step === "string") sql.exec(step);
      else step(sql);
      record(sql, version, now());
    }
    return steps.length;
  });
}

function record(sql: SqlStorage, version: number, at: number): void {
  sql.exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", version, new Date(at).toISOString());
}

/** True when the object's database has a table named `name` (for reading an older version-tracking form). */
export function hasTable(sql: SqlStorage, name: string): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;
}
