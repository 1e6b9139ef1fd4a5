/**
 * The route modules (circuit breaker, websocket TCP converter) stored through the management API,
 * remembered per isolate for a short time so a route's traffic costs no store call per request.
 * A change through the API takes effect within MODULES_TTL_MS.
 *
 * Only resolved values are shared between requests: workerd ties I/O to the request that started
 * it, so a request must never await a store call that another request made.
 */

import type { Env } from "../../env.ts";
import { getRouteModules } from "../../management/edge-routes.ts";
import type { RouteModules } from "../../management/modules.ts";
import type { Route } from "../gateway-config.ts";

export const MODULES_TTL_MS = 2_000;

const remembered = new Map<string, { until: number; modules: RouteModules }>();

export function clearRouteModulesCache(): void {
  remembered.clear();
}

/** The route's modules; if the store cannot be read, none (the route keeps serving) and the failure is logged. */
export async function routeModules(env: Env, route: Route): Promise<RouteModules> {
  const key = `${route.edgeId}/${route.id}`;
  const hit = remembered.get(key);
  if (hit && hit.until > Date.now()) return hit.modules;
  try {
    const modules = await getRouteModules(env, route.edgeId, route.id);
    remembered.set(key, { until: Date.now() + MODULES_TTL_MS, modules });
    return modules;
  } catch (error) {
    console.error(`route ${key}: cannot read its modules, serving without them: ${(error as Error).message}`);
    return hit?.modules ?? {};
  }
}
