/**
 * The isolate's memories as one object: worker.ts builds one per isolate (workerd runs one module instance per
 * isolate) and hands each layer the members it uses, so a test builds its own. The id sequence is the exception
 * (src/ids.ts says why).
 */

import type { Env } from "./env.ts";
import { LoadedGatewayMemory } from "./gateway/loaded-config.ts";
import { RateLimitServicesMemory } from "./gateway/limiter-client.ts";
import { BreakerMemory } from "./breaker/breaker-memory.ts";
import { RouteModulesCache } from "./gateway/modules/route-modules.ts";
import type { IsolateState } from "./gateway/pipeline.ts";
import { IsolateBuckets } from "./limiter/isolate-buckets.ts";
import { BodyBudget, type IsolateBodies, OPERATOR_PARTY } from "./policy/body-budget.ts";
import { ExpressionErrorLog } from "./policy/expression-error-log.ts";
import type { Settings } from "./settings.ts";
import { CompiledPolicyCache, HostCache } from "./tunnels/index.ts";

export interface Runtime extends IsolateState {
  /** The gateway config of the bundled policies, loaded on the first request. */
  readonly gateway: LoadedGatewayMemory;
  readonly rateLimitServices: RateLimitServicesMemory;
  /** Tunnel host → session, and tunnels' compiled policies. */
  readonly tunnelHosts: HostCache;
  readonly tunnelPolicies: CompiledPolicyCache;
  /** The budget of bodies held whole, by party: always present in the Worker (a test's isolate may go without). */
  readonly bodies: IsolateBodies;
}

/**
 * A fresh isolate memory. Bodies are budgeted per party: a tunnel's reads count against its account (known from
 * its host claim, remembered when its host was resolved for the request), every route of policies/ against the
 * operator's.
 */
export function createRuntime(): Runtime {
  const tunnelHosts = new HostCache();
  const partyOf = (scope: string) => {
    if (!scope.startsWith("tunnel:")) return OPERATOR_PARTY;
    const account = tunnelHosts.accountOf(scope.slice("tunnel:".length));
    return account === undefined ? scope : `account:${account}`;
  };
  return {
    buckets: new IsolateBuckets(),
    routeModules: new RouteModulesCache(),
    breakers: new BreakerMemory(),
    expressionErrors: new ExpressionErrorLog(),
    bodies: { budget: new BodyBudget(), partyOf },
    gateway: new LoadedGatewayMemory(),
    rateLimitServices: new RateLimitServicesMemory(),
    tunnelHosts,
    tunnelPolicies: new CompiledPolicyCache(),
  };
}

/** One request as the Worker's entry hands it on: what arrived, where, and the settings it runs under. */
export interface RequestContext {
  readonly request: Request;
  readonly env: Env;
  readonly ctx: ExecutionContext;
  /** The request's URL, parsed once. */
  readonly url: URL;
  readonly settings: Settings;
}
