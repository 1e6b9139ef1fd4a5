import { abortAllDurableObjects, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { LeaseDecision } from "../../src/limiter/sliding-window.ts";
import { migrateSchema } from "../../src/sqlite-migrations.ts";
import { TunnelRegistry } from "../../src/tunnels/registry-object.ts";
import { REGISTRY_MIGRATIONS } from "../../src/tunnels/registry-store.ts";

let objects = 0;
/** A fresh registry object of its own account, so tests share no storage. */
const freshRegistry = () => env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName(`acct_migrations_${objects++}`));

/** The storage of a registry as the release that tracked version `version` in a meta row left it. */
function rewindToMetaForm(sql: SqlStorage, version: number): void {
  for (const table of ["schema_migrations", "tunnels", "held_hosts", "sessions"]) sql.exec(`DROP TABLE IF EXISTS ${table}`);
  sql.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
  sql.exec("INSERT INTO meta VALUES ('schema', ?)", version);
  sql.exec("CREATE TABLE tunnels (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, record TEXT NOT NULL, lease_until INTEGER NOT NULL)");
  sql.exec("INSERT INTO tunnels VALUES ('tn_old', 'ts_old', '{}', 4102444800000)");
  if (version >= 2) {
    // Before endpoint pools (version 4) the label alone was the key.
    const [label, key] = version >= 4 ? ["label TEXT NOT NULL", ", PRIMARY KEY (label, tunnel_id)"] : ["label TEXT PRIMARY KEY", ""];
    sql.exec(`CREATE TABLE held_hosts (${label}, tunnel_id TEXT NOT NULL, session_id TEXT NOT NULL, held_until INTEGER NOT NULL${key})`);
    sql.exec("INSERT INTO held_hosts VALUES ('kept', 'tn_old', 'ts_old', 4102444800000)");
  }
  if (version >= 3) sql.exec("CREATE TABLE sessions (id TEXT PRIMARY KEY, record TEXT NOT NULL, lease_until INTEGER NOT NULL)");
}

describe("one migration helper for the SQLite objects", () => {
  it("applies pending steps in order, records each once, and a second run changes nothing", async () => {
    await runInDurableObject(freshRegistry(), (_instance, state) => {
      const steps = ["CREATE TABLE a (x INTEGER)", (sql: SqlStorage) => sql.exec("INSERT INTO a VALUES (1)"), "INSERT INTO a SELECT x + 1 FROM a"];
      state.storage.sql.exec("DROP TABLE schema_migrations");
      expect(migrateSchema(state.storage, steps, { now: () => 0 })).toBe(3);
      expect(migrateSchema(state.storage, steps)).toBe(3);
      expect(state.storage.sql.exec("SELECT x FROM a ORDER BY x").toArray()).toEqual([{ x: 1 }, { x: 2 }]);
      expect(state.storage.sql.exec("SELECT version, applied_at FROM schema_migrations").toArray()).toEqual([
        { version: 1, applied_at: "1970-01-01T00:00:00.000Z" },
        { version: 2, applied_at: "1970-01-01T00:00:00.000Z" },
        { version: 3, applied_at: "1970-01-01T00:00:00.000Z" },
      ]);
    });
  });

  it("a step that fails leaves the schema as it was: the steps before it in the same run are undone too", async () => {
    await runInDurableObject(freshRegistry(), (_instance, state) => {
      state.storage.sql.exec("DROP TABLE schema_migrations");
      expect(() => migrateSchema(state.storage, ["CREATE TABLE b (x INTEGER)", "INSERT INTO nowhere VALUES (1)"])).toThrow(/nowhere/);
      expect(state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name IN ('b', 'schema_migrations')").toArray()).toEqual([]);
    });
  });

  it.each([1, 2, 3, 4])("a registry that recorded version %i in its meta row opens at the latest version with its rows", async (version) => {
    await runInDurableObject(freshRegistry(), (_instance, state) => {
      const sql = state.storage.sql;
      rewindToMetaForm(sql, version);
      new TunnelRegistry(state, env);
      expect(sql.exec("SELECT version FROM schema_migrations ORDER BY version").toArray()).toEqual(REGISTRY_MIGRATIONS.map((_, i) => ({ version: i + 1 })));
      expect(sql.exec("SELECT id FROM tunnels").toArray()).toEqual([{ id: "tn_old" }]);
      expect(sql.exec("SELECT label, tunnel_id FROM held_hosts").toArray()).toEqual(version >= 2 ? [{ label: "kept", tunnel_id: "tn_old" }] : []);
      // Version 4's key: a second tunnel may hold the same label (an endpoint pool).
      sql.exec("INSERT INTO held_hosts VALUES ('kept', 'tn_new', 'ts_new', 4102444800000)");
      expect(sql.exec("SELECT count(*) AS n FROM sessions").one().n).toBe(0);
    });
  });

  it("a rate limiter from before the helper (its buckets table, no schema_migrations) keeps its counts", async () => {
    const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`limiter-migrations-${Math.random()}`));
    const now = Date.now();
    const take = { id: "k", spec: { capacity: 1, windowMs: 60_000 }, want: 1, leaseMs: 0, forRequest: true };
    expect(((await stub.takeAll([take], now)) as LeaseDecision[])[0]).toMatchObject({ allowed: true });
    await runInDurableObject(stub, (_instance, state) => void state.storage.sql.exec("DROP TABLE schema_migrations"));
    await abortAllDurableObjects();
    const reopened = env.RATE_LIMITER.get(stub.id);
    expect(((await reopened.takeAll([take], now)) as LeaseDecision[])[0]).toMatchObject({ allowed: false });
    const versions = await runInDurableObject(reopened, (_instance, state) => state.storage.sql.exec("SELECT version FROM schema_migrations").toArray());
    expect(versions).toEqual([{ version: 1 }]);
  });
});
