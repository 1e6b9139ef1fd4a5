/**
 * Which account owns the edges of policies/gateway.yaml, the route lookup of the module endpoints, and
 * the read of a route's modules that worker.ts hands to the gateway. The gateway is global (one
 * policies/ per deployment), so its edges belong to one account, `TOLLGATE_EDGE_ACCOUNT` (default
 * `acct_dev`): only that account sees them and stores their modules, and the gateway applies that
 * account's modules.
 */

import type { Env } from "../env.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import { settingsOf } from "../settings.ts";
import { accountStore } from "./account-store.ts";
import type { EdgeDirectory } from "./context.ts";
import type { RouteModules } from "./modules.ts";

export { DEFAULT_EDGE_ACCOUNT } from "../settings.ts";

/** The account that owns every edge of policies/gateway.yaml. */
export function edgeOwnerAccount(env: Env): string {
  return settingsOf(env).edgeAccount;
}

/**
 * Passes if `accountId` may see route `routeId` of edge `edgeId`: an unknown edge, or an edge of another
 * account, → 404 naming the edge; an unknown route → 404 naming the route.
 */
export function findEdgeRoute(edges: EdgeDirectory, env: Env, accountId: string, edgeId: string, routeId: string): void {
  const edge = accountId === edgeOwnerAccount(env) ? edges.edge(env, edgeId) : undefined;
  if (!edge) {
    throw new ServiceError(404, ErrorCode.notFound, `No HTTPS edge '${edgeId}' exists in this account.`, { details: { edge_id: edgeId } });
  }
  const route = edge.routes.find((candidate) => candidate.id === routeId);
  if (!route) {
    throw new ServiceError(404, ErrorCode.notFound, `The HTTPS edge '${edgeId}' has no route '${routeId}'.`, {
      details: { edge_id: edgeId, route_id: routeId },
    });
  }
}

/**
 * The modules stored for a route of policies/gateway.yaml (each with its `enabled` flag; apply only the
 * enabled ones). Reads the edge owner's store unless `accountId` is given. One Durable Object call.
 */
export async function getRouteModules(env: Env, edgeId: string, routeId: string, accountId: string = edgeOwnerAccount(env)): Promise<RouteModules> {
  return accountStore(env, accountId).getRouteModules(edgeId, routeId);
}
