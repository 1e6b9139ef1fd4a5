/** Decides whether a request is tunnel traffic: a tunnel host, or the agent endpoint on any other host. */

import type { Env } from "../env.ts";
import { runThroughPolicy, type IsolateState } from "../gateway/pipeline.ts";
import { acceptAgentSession, agentEndpointPolicy } from "./agent-endpoint.ts";
import { normalizeDomain, tunnelLabelOf } from "./hostnames.ts";
import { AGENT_SESSION_PATH } from "./protocol.ts";
import { relayToTunnel } from "./public-relay.ts";

/** Answers tunnel traffic; undefined means the request is for the gateway's routes. */
export function routeTunnelTraffic(request: Request, env: Env, isolate: IsolateState): Promise<Response> | undefined {
  const url = new URL(request.url);
  const label = tunnelLabelOf(url.hostname, normalizeDomain(env.TUNNEL_DOMAIN));
  if (label !== undefined) return relayToTunnel(request, env, isolate, label);
  if (url.pathname === AGENT_SESSION_PATH) {
    return runThroughPolicy(request, env, isolate, { scope: "agent-endpoint", policy: agentEndpointPolicy, forward: (original) => acceptAgentSession(original, env) });
  }
  return undefined;
}
