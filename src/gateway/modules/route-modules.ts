/**
 * The route modules (circuit breaker, websocket TCP converter) stored through the management API,
 * remembered per isolate for a short time so a route's traffic costs no store call per request.
 * A change through the API takes effect within MODULES_TTL_MS.
 */

import type { Env } from "../../env.ts";
import { getRouteModules } from "../../management/edge-routes.ts";
import type { RouteModules } from "../../management/modules.ts";
import type { Route } from "../gateway-config.ts";

export const MODULES_TTL_MS = 2_000;

const remembered = new Map<string, { until: number; modules: Promise<RouteModules> }>();

export function clearRouteModulesCache(): void {
  remembered.clear();
}

/** The route's modules; if the store cannot be read, none (the route keeps serving) and the failure is logged. */
export function routeModules(env: Env, route: Route): Promise<RouteModules> {
  const key = `${route.edgeId}/${route.id}`;
  const now = Date.now();
  const hit = remembered.get(key);
  if (hit && hit.until > now) return hit.modules;
  const modules = getRouteModules(env, route.edgeId, route.id).catch((error: unknown) => {
    console.error(`route ${key}: cannot read its modules, serving without them: ${(error as Error).message}`);
    remembered.delete(key);
    return {};
  });
  remembered.set(key, { until: now + MODULES_TTL_MS, modules });
  return modules;
}
