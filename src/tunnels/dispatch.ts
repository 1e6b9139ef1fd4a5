/** Decides whether a request is tunnel traffic: a tunnel host, or the agent endpoint on any other host. */

import type { Env } from "../env.ts";
import type { AfterResponse } from "../policy/exchange.ts";
import { acceptAgentSession, agentEndpointPolicy } from "./agent-endpoint.ts";
import { normalizeDomain, tunnelLabelOf } from "./hostnames.ts";
import { routeBodyChannel } from "./body-channel.ts";
import { AGENT_BODY_PATH, AGENT_SESSION_PATH } from "./protocol.ts";
import { relayToTunnel } from "./public-relay.ts";
import type { TunnelServices } from "./services.ts";

/**
 * Answers tunnel traffic; undefined means the request is for the gateway's routes (`url`, `domain`: when the
 * caller has them; `afterResponse`: the request's ExecutionContext).
 */
export function routeTunnelTraffic(
  request: Request,
  env: Env,
  services: TunnelServices,
  url: URL = new URL(request.url),
  domain: string = normalizeDomain(env.TUNNEL_DOMAIN),
  afterResponse?: AfterResponse,
): Promise<Response> | undefined {
  const label = tunnelLabelOf(url.hostname, domain);
  if (label !== undefined) return relayToTunnel(request, env, services, label, afterResponse);
  // Not behind the handshake limit: a busy tunnel sends one per large download. A POST costs the Worker its
  // checks only; it reaches no object without an id the platform made (see body-channel.ts).
  if (url.pathname === AGENT_BODY_PATH) return routeBodyChannel(request, env, url);
  if (url.pathname === AGENT_SESSION_PATH) {
    return services.runPolicy(
      request,
      env,
      {
        scope: "agent-endpoint",
        policy: agentEndpointPolicy,
        forward: (original) => acceptAgentSession(original, env, services),
      },
      afterResponse,
    );
  }
  return undefined;
}
