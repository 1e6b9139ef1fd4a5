/** Worker entry: the fetch handler and the exported Durable Object classes. */

import { Hono } from "hono";
import type { Env } from "./env.ts";
import { loadedGateway } from "./gateway/loaded-config.ts";
import { BreakerMemory } from "./gateway/modules/breaker-memory.ts";
import { RouteModulesCache } from "./gateway/modules/route-modules.ts";
import { handleGatewayRequest, runThroughPolicy, type IsolateState } from "./gateway/pipeline.ts";
import type { UpstreamHandlers } from "./gateway/upstream.ts";
import { IsolateBuckets } from "./limiter/isolate-buckets.ts";
import { createManagementApp } from "./management/app.ts";
import { getRouteModules } from "./management/edge-routes.ts";
import { authenticateApiKey } from "./management/auth.ts";
import { CompiledPolicyCache, HostCache, normalizeDomain, routeTunnelTraffic, type TunnelServices } from "./tunnels/index.ts";

export { RateLimiter } from "./limiter/limiter-object.ts";
export { CircuitBreaker } from "./gateway/modules/breaker-object.ts";
export { AccountStore } from "./management/account-store.ts";
export { TunnelHost, TunnelRegistry, TunnelSession } from "./tunnels/index.ts";

const app = new Hono<{ Bindings: Env }>();

/** This isolate's memories, shared by its requests (workerd runs one module instance per isolate). */
const isolate: IsolateState = {
  buckets: new IsolateBuckets(),
  routeModules: new RouteModulesCache(),
  breakers: new BreakerMemory(),
};

/** Tunnels reach the gateway's pipeline and the management API's keys only through what is handed in here. */
const tunnels: TunnelServices = {
  hosts: new HostCache(),
  policies: new CompiledPolicyCache(),
  runPolicy: (request, env, target) => runThroughPolicy(request, env, isolate, target),
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

// Isolate counters for the benchmark (rate-limiter object calls vs. rejections answered from memory).
app.get("/__tollgate/stats", (c, next) => (c.env.TOLLGATE_DEBUG_STATS === "1" ? c.json(isolate.buckets.stats) : next()));

// A gateway whose policies do not load serves nothing, tunnels included: a config with an edge host under
// TUNNEL_DOMAIN must not let that host be claimed as a tunnel while the operator fixes it.
app.use("*", async (c, next) => {
  const loaded = loadedGateway(normalizeDomain(c.env.TUNNEL_DOMAIN));
  if (!loaded.ok) return loaded.error.toResponse();
  await next();
});

// Tunnel hosts (<label>.TUNNEL_DOMAIN) and the agent endpoint, before the gateway's routes.
app.use("*", async (c, next) => (await routeTunnelTraffic(c.req.raw, c.env, tunnels)) ?? next());

app.all("*", (c) => {
  const loaded = loadedGateway(normalizeDomain(c.env.TUNNEL_DOMAIN));
  if (!loaded.ok) return loaded.error.toResponse();
  return handleGatewayRequest(c.req.raw, c.env, c.executionCtx as ExecutionContext, loaded.gateway.routes, upstreamHandlers, isolate);
});

export default app;
