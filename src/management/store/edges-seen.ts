/**
 * The edges of policies/gateway.yaml as an account's store knows them: when the API first showed each edge
 * and route (their `created_at`; the config carries no dates) and the modules stored for each route.
 */

import type { RouteModules } from "../modules.ts";
import { getRouteModules } from "./route-modules.ts";

/** An edge and its routes, by id. */
export interface EdgeOutline {
  readonly edgeId: string;
  readonly routeIds: readonly string[];
}

export interface EdgeFacts {
  readonly createdAt: string;
  readonly routes: Record<string, { readonly createdAt: string; readonly modules: RouteModules }>;
}

/** The facts of each edge, in the order given. Edges and routes not seen before are recorded as first seen `now`. */
export function describeEdges(sql: SqlStorage, edges: readonly EdgeOutline[], now: string): EdgeFacts[] {
  const firstSeen = (edgeId: string, routeId: string): string => {
    sql.exec("INSERT OR IGNORE INTO edges_seen (edge_id, route_id, first_seen) VALUES (?, ?, ?)", edgeId, routeId, now);
    return sql.exec<{ first_seen: string }>("SELECT first_seen FROM edges_seen WHERE edge_id = ? AND route_id = ?", edgeId, routeId).one().first_seen;
  };
  return edges.map(({ edgeId, routeIds }) => ({
    // '' stands for the edge itself (route ids are never empty)
    createdAt: firstSeen(edgeId, ""),
    routes: Object.fromEntries(routeIds.map((routeId) => [routeId, { createdAt: firstSeen(edgeId, routeId), modules: getRouteModules(sql, edgeId, routeId) }])),
  }));
}
