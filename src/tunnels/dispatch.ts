/** Decides whether a request is tunnel traffic: a tunnel host, or the agent endpoint on any other host. */

import type { Env } from "../env.ts";
import type { AfterResponse } from "../policy/exchange.ts";
import { acceptAgentSession, agentEndpointPolicy } from "./agent-endpoint.ts";
import { tunnelLabelOf } from "./hostnames.ts";
import { routeBodyChannel } from "./body-channel.ts";
import { AGENT_BODY_PATH, AGENT_SESSION_PATH } from "../relay/index.ts";
import { relayToTunnel } from "./public-relay.ts";
import type { TunnelServices } from "./services.ts";

/** A request as the Worker's entry hands it to the tunnels (`afterResponse`: its ExecutionContext). */
export interface TunnelTraffic {
  readonly request: Request;
  readonly env: Env;
  /** The request's URL, parsed once. */
  readonly url: URL;
  /** TUNNEL_DOMAIN as the settings normalized it ("" = tunnels are off). */
  readonly tunnelDomain: string;
  readonly afterResponse?: AfterResponse;
}

/** Answers tunnel traffic; undefined means the request is for the gateway's routes. */
export function routeTunnelTraffic(traffic: TunnelTraffic, services: TunnelServices): Promise<Response> | undefined {
  const { request, env, url, tunnelDomain: domain, afterResponse } = traffic;
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
