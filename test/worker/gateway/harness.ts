/** Builds a gateway from inline files and serves requests through the real pipeline, in workerd. */

import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import type { Env } from "../../../src/env.ts";
import { loadGatewayConfig, type GatewayLoadOptions } from "../../../src/gateway/gateway-config.ts";
import { ExpressionErrorLog } from "../../../src/policy/expression-error-log.ts";
import { BreakerMemory } from "../../../src/breaker/breaker-memory.ts";
import { RouteModulesCache } from "../../../src/gateway/modules/route-modules.ts";
import { handleGatewayRequest, type IsolateState } from "../../../src/gateway/pipeline.ts";
import { IsolateBuckets } from "../../../src/limiter/isolate-buckets.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import type { UpstreamHandlers } from "../../../src/gateway/upstream.ts";
import { buildRouteTable, type RouteTable } from "../../../src/gateway/route-table.ts";
import { formatIssue } from "../../../src/policy/issues.ts";

let gateways = 0;

/**
 * A gateway whose edge ids are unique per call, so no two tests share rate-limit buckets. `options`: as the
 * Worker loads it (`policies: "on-first-use"`) rather than fully checked at load.
 */
export function gatewayFrom(files: Record<string, string>, options: GatewayLoadOptions = {}): RouteTable {
  const unique = `t${gateways++}${Math.random().toString(36).slice(2, 8)}`;
  const rewritten = Object.fromEntries(Object.entries(files).map(([name, text]) => [name, text.replaceAll("EDGE", unique)]));
  const result = loadGatewayConfig(rewritten, options);
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join("\n"));
  return buildRouteTable(result.config);
}

export async function send(
  routes: RouteTable,
  request: Request,
  overrides: Partial<Env> = {},
  handlers: UpstreamHandlers = upstreamHandlers,
  isolate: IsolateState = newIsolate(),
): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await handleGatewayRequest(request, { env: { ...env, ...overrides } as Env, ctx, routes, handlers, isolate });
  await waitOnExecutionContext(ctx);
  return response;
}

/**
 * A fresh isolate memory (as if each call landed on a new isolate, unless a test passes one along). Its
 * bucket, route-module and circuit-breaker memories, and the breaker objects it calls, all run on `now`.
 */
export function newIsolate(now?: () => number) {
  return {
    buckets: new IsolateBuckets({ now }),
    routeModules: new RouteModulesCache({ now }),
    breakers: new BreakerMemory({ now }),
    expressionErrors: new ExpressionErrorLog({ now }),
  };
}

/** One edge for host `gw.test` with the given routes (YAML list items, indented under `routes:`). */
export function singleEdge(routesYaml: string, policies: Record<string, string> = {}): RouteTable {
  return gatewayFrom({
    "policies/gateway.yaml": `edges:\n  - id: EDGE\n    hostnames: ["gw.test"]\n    routes:\n${routesYaml}`,
    ...policies,
  });
}
