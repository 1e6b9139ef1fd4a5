/** The request pipeline: the one place that knows the order of the steps. */

import type { Env } from "../env.ts";
import { errorAnswer } from "../error-answer.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import { EvaluationBudget } from "../policy/evaluation-budget.ts";
import { runPhase, type EvaluationLog } from "../policy/evaluate.ts";
import { initialVars } from "../policy/actions/index.ts";
import type { ActionServices, AfterResponse, ConnectionFacts, Exchange, InterpolationLog, InternalForwardResult } from "../policy/exchange.ts";
import { ForwardChain, internalTargetNotFound } from "../policy/forward-chain.ts";
import { isInternalHost } from "../policy/internal-url.ts";
import type { InternalTargets, PolicyTarget } from "../policy/target.ts";
import type { BodyAllowance, IsolateBodies } from "../policy/body-budget.ts";
import { clientIpBucket } from "../policy/client-ip-bucket.ts";
import type { IsolateBuckets } from "../limiter/isolate-buckets.ts";
import { ingressId } from "../ingress.ts";
import { withRateLimitFields } from "../policy/rate-limit-fields.ts";
import { rateLimitServices, type RateLimitServicesMemory } from "./limiter-client.ts";
import { type SettleLog, settleOnResponse } from "./response-settle.ts";
import type { Route } from "./gateway-config.ts";
import { policyLoadError } from "./policy-error.ts";
import type { RouteTable } from "./route-table.ts";
import { dispatch, type UpstreamHandlers } from "./upstream.ts";
import { ExchangeRequestView } from "./exchange-request-view.ts";
import { policyCircuits, withCircuitBreaker } from "./modules/breaker-client.ts";
import type { BreakerMemory } from "../breaker/breaker-memory.ts";
import type { RouteModulesCache } from "./modules/route-modules.ts";
import { bridgeWebSocketToTcp } from "./modules/websocket-tcp.ts";
import type { Upstream } from "./upstream-spec.ts";

/** The client address; `cf-connecting-ip` is set by Cloudflare (locally it stands in, and a client can forge it). */
export function clientIp(request: Request): string {
  return request.headers.get("cf-connecting-ip") ?? "";
}

/** What the gateway remembers across requests in one isolate; worker.ts makes one per isolate and passes it in. */
export interface IsolateState {
  readonly buckets: IsolateBuckets;
  readonly routeModules: RouteModulesCache;
  readonly breakers: BreakerMemory;
  /** Where expressions that fail at request time (gating entries or interpolated by `${…}`) are logged, at a bounded rate. */
  readonly expressionErrors: EvaluationLog & InterpolationLog & SettleLog;
  /** Rate-limit services shared by requests that need no per-request sink; absent: made for each request. */
  readonly rateLimitServices?: RateLimitServicesMemory;
  readonly limitOverrides?: (env: Env) => ActionServices["overrides"];
  /** The budget of bodies held whole (request bodies actions read, response bodies settles read); absent: unbounded. */
  readonly bodies?: IsolateBodies;
}

/**
 * How a request came to a policy run: `url` when already parsed; `afterResponse` its ExecutionContext (a lease
 * renewal may run there); `chain` the targets a forward-internal brought it through, absent from a client.
 */
export type PolicyPassage = { readonly url?: URL; readonly afterResponse?: AfterResponse; readonly chain?: ForwardChain };

/** Runs inbound policy → target → outbound policy for one request. */
export async function runThroughPolicy(
  request: Request,
  env: Env,
  isolate: IsolateState,
  target: PolicyTarget,
  passage: PolicyPassage = {},
): Promise<Response> {
  const { url = new URL(request.url), afterResponse, chain } = passage;
  const client = chain ? chain.clientIp : clientIp(request);
  const bodies: BodyAllowance | undefined = isolate.bodies && {
    budget: isolate.bodies.budget,
    party: isolate.bodies.partyOf(target.scope),
    // Grouped only when a read begins (an IPv6 address is parsed), never on the path of a request with no body read.
    get client() {
      return clientIpBucket(client);
    },
  };
  const view = new ExchangeRequestView(request, url, bodies);
  // A forwarded request keeps the client's address (a policy may have rewritten the header) and its budget.
  let forwarded: Response | undefined;
  const internal = target.internal;
  const exchange: Exchange = {
    scope: target.scope,
    afterResponse,
    clientIp: client,
    request: view,
    vars: initialVars(),
    budget: chain ? chain.budget : new EvaluationBudget(),
    // Read only when a conn.geo / conn.tls variable needs it: request.cf is materialized on first access.
    connection: () => request.cf as ConnectionFacts | undefined,
    forwardInternal:
      internal &&
      (async (to) => {
        const result = await forwardInternal({ client: request, view, exchange, env, isolate, scope: target.scope, passage }, internal, to);
        if (result.ok) forwarded = result.response;
        return result;
      }),
  };
  // INGRESS_ID when configured; else the data center, remembered per isolate (reading request.cf is costly).
  const ingress = ingressId(env, request, isolate.buckets.ingress);
  const services: ActionServices = {
    ...(isolate.rateLimitServices?.of(env, ingress, isolate.buckets) ?? rateLimitServices(env, ingress, isolate.buckets)),
    interpolationErrors: isolate.expressionErrors,
    breakers: policyCircuits({ env, memory: isolate.breakers, afterResponse }, ingress),
    overrides: isolate.limitOverrides?.(env),
  };

  const rejected = await runPhase(target.policy.inbound, exchange, services, isolate.expressionErrors);
  // A forward-internal's answer stands for the upstream's: the outbound policy runs on it (as on ngrok).
  if (rejected && rejected !== forwarded) {
    view.releaseBody();
    const answer = withRateLimitFields(rejected, exchange);
    target.answeredItself?.(answer, exchange);
    return answer;
  }
  // Costs the response settles (rate-limit's settle_cost) start on the target's answer, as it came.
  let answered: Response;
  try {
    answered = rejected ?? (await target.forward(view.forwardable(), exchange));
  } catch (error) {
    // An upstream that broke the gateway's own call failed as surely as one that answered 502.
    if (exchange.upstreamObservers) await observeUpstream(exchange.upstreamObservers, 502);
    throw error;
  } finally {
    // The upstream has answered, so it has taken the body it was sent (or it failed): the bytes read leave the budget.
    view.releaseBody();
  }
  if (exchange.upstreamObservers) await observeUpstream(exchange.upstreamObservers, answered.status);
  const response = settleOnResponse(answered, exchange, afterResponse, isolate.expressionErrors, bodies);
  if (target.policy.outbound.length === 0 || response.webSocket) return withRateLimitFields(response, exchange);

  exchange.response = { status: response.status, headers: new Headers(response.headers) };
  // As on ngrok, set-vars variables belong to the phase that set them.
  exchange.policyVars = undefined;
  const replaced = await runPhase(target.policy.outbound, exchange, services, isolate.expressionErrors);
  if (replaced) {
    await response.body?.cancel();
    return withRateLimitFields(replaced, exchange);
  }
  return withRateLimitFields(
    new Response(response.body, { status: response.status, statusText: response.statusText, headers: exchange.response.headers }),
    exchange,
  );
}

/** Tells circuit-breakers the upstream's status; waits for those whose record must land first (a half-open probe). */
async function observeUpstream(observers: NonNullable<Exchange["upstreamObservers"]>, status: number): Promise<void> {
  await Promise.all(observers.map((observe) => observe(status)));
}

/** One request in its policy run, as forward-internal sends it on: `scope` is its target's, `passage` how it came. */
interface PolicyRun {
  readonly client: Request;
  readonly view: ExchangeRequestView;
  readonly exchange: Exchange;
  readonly env: Env;
  readonly isolate: IsolateState;
  readonly scope: string;
  readonly passage: PolicyPassage;
}

/**
 * forward-internal: the request as the inbound policy left it (headers; a body an action read) through the
 * target `to` names among `internal`, in a chain that refuses loops and long chains before anything is sent.
 */
async function forwardInternal(run: PolicyRun, internal: InternalTargets, to: URL): Promise<InternalForwardResult> {
  const { client, view, exchange, env, isolate, passage } = run;
  const from = passage.chain ?? ForwardChain.startingAt(run.scope, exchange.clientIp, exchange.budget);
  // Refused before the body is touched, so on_error: continue still has the whole request to send on.
  const refused = (error: ServiceError): InternalForwardResult => ({ ok: false, response: errorAnswer(error, client) });
  const full = from.full(to);
  if (full) return refused(full);
  const next = await internal.resolve(to, view);
  if (next === undefined) return refused(internalTargetNotFound(to));
  if (next instanceof ServiceError) return refused(next);
  const onward = from.to(next.scope, to);
  if (onward instanceof ServiceError) return refused(onward);
  // Method, URL (so the Host the client used, as ngrok keeps it) and body as sent; the headers as changed.
  const request = new Request(view.forwardable(), { headers: view.headers });
  return { ok: true, response: await runThroughPolicy(request, env, isolate, next, { url: view.url, afterResponse: passage.afterResponse, chain: onward }) };
}

/** A route's label (`edge/route`) and bucket scope, made once per route rather than per request. */
const routeNames = new WeakMap<Route, { label: string; scope: string }>();
function namesOf(route: Route): { label: string; scope: string } {
  let names = routeNames.get(route);
  if (!names) {
    const label = `${route.edgeId}/${route.id}`;
    names = { label, scope: `route:${label}` };
    routeNames.set(route, names);
  }
  return names;
}

const NO_ROUTE_ADVICE = {
  title: "No route for this address",
  steps: [
    "This gateway serves only the host names and paths its operator configured: check the address.",
    "If you run this gateway: add a route for this host and path to policies/gateway.yaml.",
  ],
};

function noRoute(url: URL): ServiceError {
  return new ServiceError(404, ErrorCode.noRoute, `No route of this gateway serves host '${url.hostname}' and path '${url.pathname}'.`, {
    details: { host: url.hostname, path: url.pathname },
    advice: NO_ROUTE_ADVICE,
  });
}

/** What serving a request on the gateway's routes takes besides the request: the invocation, the routes, the isolate. */
export interface GatewayContext {
  readonly env: Env;
  readonly ctx: ExecutionContext;
  readonly routes: RouteTable;
  readonly handlers: UpstreamHandlers;
  readonly isolate: IsolateState;
}

/** Serves a request addressed to a route of policies/gateway.yaml (`url`: the request's, when already parsed). */
export async function handleGatewayRequest(request: Request, gateway: GatewayContext, url: URL = new URL(request.url)): Promise<Response> {
  // A .internal host is served to forward-internal only, as ngrok's internal endpoints are.
  const route = isInternalHost(url.hostname) ? undefined : gateway.routes.match(url.hostname, url.pathname);
  if (!route) return errorAnswer(noRoute(url), request);
  const target = await routeTarget(route, gateway);
  if (target instanceof ServiceError) return errorAnswer(target, request);
  return runThroughPolicy(request, gateway.env, gateway.isolate, target, { url, afterResponse: gateway.ctx });
}

/** A route as its policy's target: its upstream behind its modules, and the .internal routes it may forward to. */
async function routeTarget(route: Route, gateway: GatewayContext): Promise<PolicyTarget | ServiceError> {
  const { env, ctx, handlers, isolate } = gateway;
  const { label, scope } = namesOf(route);
  const policy = route.policy();
  if (!policy.ok) return policyLoadError(`The policy of route '${label}' does not load`, policy.issues);
  const read = handlers.routeModules;
  const modules = read ? (isolate.routeModules.current(label) ?? (await isolate.routeModules.get(label, () => read(env, route)))) : {};
  const upstream: Upstream = route.upstream;
  const converter = modules.websocket_tcp_converter?.enabled && upstream.kind === "tcp" ? upstream : undefined;
  const breaker = modules.circuit_breaker?.enabled ? modules.circuit_breaker : undefined;

  let forward = (original: Request, exchange: Exchange): Promise<Response> =>
    converter ? Promise.resolve(bridgeWebSocketToTcp(original, converter, label)) : dispatch(upstream, original, exchange, env, ctx, handlers);
  if (breaker) {
    const direct = forward;
    const spec = {
      trippedMs: breaker.tripped_duration * 1000,
      rollingWindowMs: breaker.rolling_window * 1000,
      numBuckets: breaker.num_buckets,
      volumeThreshold: breaker.volume_threshold,
      errorThresholdPercentage: breaker.error_threshold_percentage,
    };
    const home = { env, memory: isolate.breakers, afterResponse: ctx };
    forward = (original, exchange) =>
      withCircuitBreaker(home, { ingress: ingressId(env, original, isolate.buckets.ingress), label, spec }, () => direct(original, exchange), original);
  }
  return { scope, policy: policy.policy, forward, internal: internalRoutes(gateway) };
}

/**
 * The routes forward-internal on a route may reach: those of edges whose host names are under .internal
 * (matched by the request's path), never a tunnel, never the catch-all edge.
 */
function internalRoutes(gateway: GatewayContext): InternalTargets {
  const { routes } = gateway;
  return {
    async resolve(url, request) {
      const host = url.hostname;
      const route = routes.match(host, request.url.pathname);
      const edge = route && routes.edge(route.edgeId);
      const named = edge?.hostnames.some((name) => name === host || (name.startsWith("*.") && isInternalHost(name) && host.endsWith(name.slice(1))));
      return route && named ? routeTarget(route, gateway) : undefined;
    },
  };
}
