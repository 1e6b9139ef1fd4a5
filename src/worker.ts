/** Worker entry: the fetch handler and the exported Durable Object classes. */

import type { Env } from "./env.ts";
import { errorAnswer } from "./error-answer.ts";
import { ErrorCode, ServiceError } from "./errors.ts";
import { handleGatewayRequest, runThroughPolicy } from "./gateway/pipeline.ts";
import type { UpstreamHandlers } from "./gateway/upstream.ts";
import { ingressId } from "./ingress.ts";
import { createManagementApp } from "./management/app.ts";
import { accountStore } from "./management/account-store.ts";
import { edgeOwnerAccount, getRouteModules } from "./management/edge-routes.ts";
import { authenticateApiKey } from "./management/auth.ts";
import { OverrideCache } from "./limiter/override-cache.ts";
import { overrideServices } from "./limiter/override-service.ts";
import { type ActionLimits, limitsOf } from "./policy/actions/rate-limit-plan.ts";
import { type CompiledPolicy, compilePolicy } from "./policy/compile.ts";
import { createRuntime, type RequestContext } from "./runtime.ts";
import { SettingsError, settingsOf } from "./settings.ts";
import { routeTunnelTraffic, type TunnelServices } from "./tunnels/index.ts";
import type { HostClaim } from "./tunnels/host-claims.ts";
import { tunnelLabelOf } from "./tunnels/hostnames.ts";
import { getOnlineTunnel } from "./tunnels/registry-client.ts";

export { RateLimiter } from "./limiter/limiter-object.ts";
export { CircuitBreaker } from "./breaker/breaker-object.ts";
export { AccountStore } from "./management/account-store.ts";
export { TunnelHost, TunnelRegistry, TunnelSession } from "./tunnels/index.ts";

/**
 * This isolate's memories, shared by its requests (workerd runs one module instance per isolate), and its copy of
 * the rate-limit overrides set through the management API: a route's are its edge owner's, a tunnel's its own
 * account's (known from its host claim, remembered when its host was resolved for the request being decided).
 */
const isolate = createRuntime();
const overrideCache = new OverrideCache();
const runtime = {
  ...isolate,
  limitOverrides: overrideServices<Env>(overrideCache, {
    read: (env, accountId) => accountStore(env, accountId).liveOverrides(),
    accountOf(env, scope) {
      if (scope.startsWith("route:")) return edgeOwnerAccount(env);
      return scope.startsWith("tunnel:") ? isolate.tunnelHosts.accountOf(scope.slice("tunnel:".length)) : undefined;
    },
  }),
};

/** Tunnels reach the gateway's pipeline and the management API's keys only through what is handed in here. */
const tunnels: TunnelServices = {
  hosts: runtime.tunnelHosts,
  policies: runtime.tunnelPolicies,
  runPolicy: (request, env, target, afterResponse) => runThroughPolicy(request, env, runtime, target, { afterResponse }),
  authenticate: authenticateApiKey,
};

/** The gateway of `env`'s settings: requests only reach the management API once it has loaded. */
function loadedGateway(env: Env) {
  const loaded = runtime.gateway.of(settingsOf(env).tunnelDomain);
  if (!loaded.ok) throw loaded.error;
  return loaded.gateway;
}

/** The rate-limit action named `action` of a compiled policy, for reading its buckets back. */
function actionLimits(policy: CompiledPolicy, action: string): ActionLimits | undefined {
  const entries = [...policy.inbound, ...policy.outbound];
  return entries.flatMap((entry) => entry.actions.map(limitsOf)).find((limits) => limits?.name === action);
}

/**
 * The compiled policy of tunnel `tunnelId` when it is online in `accountId` and serves a host: the registry (by
 * account) finds its URL, the host's object the claim that carries its policy. Null when it is not.
 */
async function onlineTunnelPolicy(env: Env, accountId: string, tunnelId: string): Promise<CompiledPolicy | null> {
  const record = await getOnlineTunnel(env, accountId, tunnelId);
  const label = record?.public_url ? tunnelLabelOf(new URL(record.public_url).hostname, settingsOf(env).tunnelDomain) : undefined;
  if (label === undefined) return null;
  // the stub's inferred type loses `unknown` fields (the policy) inside an array
  const members = (await env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label)).serving()) as HostClaim[];
  const claim = members.find((member) => member.tunnelId === tunnelId && member.accountId === accountId);
  if (!claim) return null;
  if (claim.trafficPolicy === undefined) return { inbound: [], outbound: [] };
  // compiled here, not taken from the tunnels' cache: a read-back is rare, and that cache is this isolate's, by host
  const compiled = compilePolicy(claim.trafficPolicy, { prefix: ["traffic_policy"] });
  return compiled.ok ? compiled.policy : null;
}

const management = createManagementApp({
  edges: {
    edge: (env, edgeId) => loadedGateway(env).routes.edge(edgeId),
    edges: (env) => loadedGateway(env).config.edges,
  },
  rateLimits: {
    action(env, edgeId, routeId, action) {
      const policy = loadedGateway(env)
        .routes.edge(edgeId)
        ?.routes.find((route) => route.id === routeId)
        ?.policy();
      return policy?.ok ? actionLimits(policy.policy, action) : undefined;
    },
    async tunnelAction(env, accountId, tunnelId, action) {
      const policy = await onlineTunnelPolicy(env, accountId, tunnelId);
      return policy && actionLimits(policy, action);
    },
    // The pipeline named the ingress of the request that brought this call a moment ago, from its request.cf.
    ingress: (env, request) => ingressId(env, request, runtime.buckets.ingress),
  },
  // a labeled tunnel (no URL of its own) runs no policy of its own: its traffic is a route's
  tunnels: { isOnline: async (env, accountId, tunnelId) => (await getOnlineTunnel(env, accountId, tunnelId))?.public_url !== undefined },
});

/** The gateway's built-in upstreams: the management API, and the route modules stored through it. */
export const upstreamHandlers: UpstreamHandlers = {
  management: (request, env, ctx) => management.fetch(request, env, ctx),
  routeModules: (env, route) => getRouteModules(env, route.edgeId, route.id),
};

/**
 * Every request: the benchmark's counters, then tunnel traffic, then the gateway's routes. A plain handler,
 * not a router: a flood of rejected requests runs this for each one, and the URL is parsed once.
 */
async function serve({ request, env, ctx, url, settings }: RequestContext): Promise<Response> {
  // Isolate counters for the benchmark (rate-limiter object calls vs. rejections answered from memory, override reads).
  if (url.pathname === "/__tollgate/stats" && settings.debugStats && request.method === "GET")
    return Response.json({ ...runtime.buckets.stats, overrideReads: overrideCache.stats });

  // A gateway whose policies do not load serves nothing, tunnels included: a config with an edge host under
  // TUNNEL_DOMAIN must not let that host be claimed as a tunnel while the operator fixes it.
  const loaded = runtime.gateway.of(settings.tunnelDomain);
  if (!loaded.ok) return errorAnswer(loaded.error, request);

  // Tunnel hosts (<label>.TUNNEL_DOMAIN) and the agent endpoint, before the gateway's routes.
  const tunnel = routeTunnelTraffic({ request, env, url, tunnelDomain: settings.tunnelDomain, afterResponse: ctx }, tunnels);
  if (tunnel) return tunnel;
  return handleGatewayRequest(request, { env, ctx, routes: loaded.gateway.routes, handlers: upstreamHandlers, isolate: runtime }, url);
}

/** The request's context, or the 500 that names the bad setting: a gateway misconfigured serves nothing. */
function contextOf(request: Request, env: Env, ctx: ExecutionContext): RequestContext | Response {
  try {
    return { request, env, ctx, url: new URL(request.url), settings: settingsOf(env) };
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    const answer = new ServiceError(500, ErrorCode.internal, error.message);
    answer.cause = error;
    return errorAnswer(answer, request);
  }
}

export default {
  async fetch(request, env, ctx) {
    try {
      const context = contextOf(request, env, ctx);
      return context instanceof Response ? context : await serve(context);
    } catch (error) {
      console.error(`Tollgate: unhandled error: ${(error as Error)?.stack ?? error}`);
      return errorAnswer(new ServiceError(500, ErrorCode.internal, "The gateway failed to handle the request."), request);
    }
  },
} satisfies ExportedHandler<Env>;
