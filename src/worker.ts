/** Worker entry: the fetch handler and the exported Durable Object classes. */

import type { Env } from "./env.ts";
import { errorAnswer } from "./error-answer.ts";
import { ErrorCode, ServiceError } from "./errors.ts";
import { loadedGateway } from "./gateway/loaded-config.ts";
import { BreakerMemory } from "./gateway/modules/breaker-memory.ts";
import { RouteModulesCache } from "./gateway/modules/route-modules.ts";
import { handleGatewayRequest, runThroughPolicy, type IsolateState } from "./gateway/pipeline.ts";
import type { UpstreamHandlers } from "./gateway/upstream.ts";
import { IsolateBuckets } from "./limiter/isolate-buckets.ts";
import { ExpressionErrorLog } from "./policy/expression-error-log.ts";
import { createManagementApp } from "./management/app.ts";
import { getRouteModules } from "./management/edge-routes.ts";
import { authenticateApiKey } from "./management/auth.ts";
import { CompiledPolicyCache, HostCache, normalizeDomain, routeTunnelTraffic, type TunnelServices } from "./tunnels/index.ts";

export { RateLimiter } from "./limiter/limiter-object.ts";
export { CircuitBreaker } from "./gateway/modules/breaker-object.ts";
export { AccountStore } from "./management/account-store.ts";
export { TunnelHost, TunnelRegistry, TunnelSession } from "./tunnels/index.ts";

/** This isolate's memories, shared by its requests (workerd runs one module instance per isolate). */
const isolate: IsolateState = {
  buckets: new IsolateBuckets(),
  routeModules: new RouteModulesCache(),
  breakers: new BreakerMemory(),
  expressionErrors: new ExpressionErrorLog(),
};

/** Tunnels reach the gateway's pipeline and the management API's keys only through what is handed in here. */
const tunnels: TunnelServices = {
  hosts: new HostCache(),
  policies: new CompiledPolicyCache(),
  runPolicy: (request, env, target, afterResponse) => runThroughPolicy(request, env, isolate, target, undefined, afterResponse),
  authenticate: authenticateApiKey,
};

const management = createManagementApp({
  edges: {
    edge(env, edgeId) {
      const loaded = loadedGateway(normalizeDomain(env.TUNNEL_DOMAIN));
      if (!loaded.ok) throw loaded.error;
      return loaded.gateway.routes.edge(edgeId);
    },
    edges(env) {
      const loaded = loadedGateway(normalizeDomain(env.TUNNEL_DOMAIN));
      if (!loaded.ok) throw loaded.error;
      return loaded.gateway.config.edges;
    },
  },
});

/** The gateway's built-in upstreams: the management API, and the route modules stored through it. */
export const upstreamHandlers: UpstreamHandlers = {
  management: (request, env, ctx) => management.fetch(request, env, ctx),
  routeModules: (env, route) => getRouteModules(env, route.edgeId, route.id),
};

/** TUNNEL_DOMAIN as configured, and normalized: normalized once per value, not per request. */
let tunnelDomain = { configured: "\u0000", normalized: "" };
function tunnelDomainOf(env: Env): string {
  if (env.TUNNEL_DOMAIN !== tunnelDomain.configured) tunnelDomain = { configured: env.TUNNEL_DOMAIN, normalized: normalizeDomain(env.TUNNEL_DOMAIN) };
  return tunnelDomain.normalized;
}

/**
 * Every request: the benchmark's counters, then tunnel traffic, then the gateway's routes. A plain handler,
 * not a router: a flood of rejected requests runs this for each one, and the URL is parsed once.
 */
async function serve(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const url = new URL(request.url);
  // Isolate counters for the benchmark (rate-limiter object calls vs. rejections answered from memory).
  if (url.pathname === "/__tollgate/stats" && env.TOLLGATE_DEBUG_STATS === "1" && request.method === "GET") return Response.json(isolate.buckets.stats);

  // A gateway whose policies do not load serves nothing, tunnels included: a config with an edge host under
  // TUNNEL_DOMAIN must not let that host be claimed as a tunnel while the operator fixes it.
  const domain = tunnelDomainOf(env);
  const loaded = loadedGateway(domain);
  if (!loaded.ok) return errorAnswer(loaded.error, request);

  // Tunnel hosts (<label>.TUNNEL_DOMAIN) and the agent endpoint, before the gateway's routes.
  const tunnel = routeTunnelTraffic(request, env, tunnels, url, domain, ctx);
  if (tunnel) return tunnel;
  return handleGatewayRequest(request, env, ctx, loaded.gateway.routes, upstreamHandlers, isolate, url);
}

export default {
  async fetch(request, env, ctx) {
    try {
      return await serve(request, env, ctx);
    } catch (error) {
      console.error(`Tollgate: unhandled error: ${(error as Error)?.stack ?? error}`);
      return errorAnswer(new ServiceError(500, ErrorCode.internal, "The gateway failed to handle the request."), request);
    }
  },
} satisfies ExportedHandler<Env>;
