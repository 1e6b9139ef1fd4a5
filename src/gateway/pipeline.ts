/** The request pipeline: the one place that knows the order of the steps. */

import type { Env } from "../env.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import type { CompiledPolicy } from "../policy/compile.ts";
import { runPhase } from "../policy/evaluate.ts";
import { initialVars, type ActionServices, type Exchange } from "../policy/exchange.ts";
import { durableObjectCounter, ingressId } from "./limiter-client.ts";
import type { RouteTable } from "./route-table.ts";
import { dispatch, type UpstreamHandlers } from "./upstream.ts";
import type { Upstream } from "./upstream-spec.ts";

/** The client address; `cf-connecting-ip` is set by Cloudflare (locally it stands in, and a client can forge it). */
export function clientIp(request: Request): string {
  return request.headers.get("cf-connecting-ip") ?? "";
}

export interface Target {
  /** Namespace of the target's rate-limit buckets. */
  readonly scope: string;
  readonly policy: CompiledPolicy;
  /** Sends the request (after the inbound policy) to the target and returns its answer. */
  forward(request: Request, exchange: Exchange): Promise<Response>;
}

/** Runs inbound policy → target → outbound policy for one request. */
export async function runThroughPolicy(request: Request, env: Env, target: Target): Promise<Response> {
  const url = new URL(request.url);
  const exchange: Exchange = {
    scope: target.scope,
    clientIp: clientIp(request),
    request: { method: request.method, url, host: url.hostname, headers: new Headers(request.headers) },
    vars: initialVars(),
  };
  const services: ActionServices = { counter: durableObjectCounter(env, ingressId(env, request)) };

  const rejected = await runPhase(target.policy.inbound, exchange, services);
  if (rejected) return rejected;
  const response = await target.forward(request, exchange);
  if (target.policy.outbound.length === 0 || response.webSocket) return response;

  exchange.response = { status: response.status, headers: new Headers(response.headers) };
  const replaced = await runPhase(target.policy.outbound, exchange, services);
  if (replaced) {
    await response.body?.cancel();
    return replaced;
  }
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: exchange.response.headers });
}

/** Serves a request addressed to a route of policies/gateway.yaml. */
export async function handleGatewayRequest(
  request: Request,
  env: Env,
  ctx: ExecutionContext,
  routes: RouteTable,
  handlers: UpstreamHandlers,
): Promise<Response> {
  const url = new URL(request.url);
  const route = routes.match(url.hostname, url.pathname);
  if (!route) {
    return new ServiceError(404, ErrorCode.noRoute, `No route of this gateway serves host '${url.hostname}' and path '${url.pathname}'.`, {
      host: url.hostname,
      path: url.pathname,
    }).toResponse();
  }
  const upstream: Upstream = route.upstream;
  return runThroughPolicy(request, env, {
    scope: `route:${route.edgeId}/${route.id}`,
    policy: route.policy,
    forward: (original, exchange) => dispatch(upstream, original, exchange, env, ctx, handlers),
  });
}
