/** Route modules in an account's SQLite database, one JSON document per (edge, route, kind). */

import type { ModuleKind, RouteModules } from "../modules.ts";
import { MODULE_SCHEMAS } from "../modules.ts";
import { rfc3339 } from "../../time.ts";

type ModuleRow = { kind: string; config: string };

/** Stores the already validated `config`, replacing any module of that kind on the route. */
export function putRouteModule(sql: SqlStorage, edgeId: string, routeId: string, kind: ModuleKind, config: object): void {
  sql.exec(
    `INSERT INTO route_modules (edge_id, route_id, kind, config, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (edge_id, route_id, kind) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at`,
    edgeId,
    routeId,
    kind,
    JSON.stringify(config),
    rfc3339(),
  );
}

export function deleteRouteModule(sql: SqlStorage, edgeId: string, routeId: string, kind: ModuleKind): boolean {
  return sql.exec("DELETE FROM route_modules WHERE edge_id = ? AND route_id = ? AND kind = ?", edgeId, routeId, kind).rowsWritten > 0;
}

/**
 * Every module of a route. Stored documents are parsed again with today's schema, which fills defaults
 * added since they were written; a document the schema no longer accepts is left out and logged.
 */
export function getRouteModules(sql: SqlStorage, edgeId: string, routeId: string): RouteModules {
  const modules: Record<string, unknown> = {};
  for (const row of sql.exec<ModuleRow>("SELECT kind, config FROM route_modules WHERE edge_id = ? AND route_id = ?", edgeId, routeId)) {
    if (!(row.kind in MODULE_SCHEMAS)) continue;
    const parsed = MODULE_SCHEMAS[row.kind as ModuleKind].safeParse(JSON.parse(row.config));
    if (parsed.success) modules[row.kind] = parsed.data;
    else console.error(`Tollgate: the stored ${row.kind} module of ${edgeId}/${routeId} no longer validates: ${parsed.error.message}`);
  }
  return modules as RouteModules;
}
