/**
 * Public traffic to a tunnel host: resolve the host to its tunnel, run the tunnel's traffic policy through
 * the gateway pipeline (so rate limits work as on routes), and relay through the agent's session.
 */

import type { Env } from "../env.ts";
import type { AfterResponse } from "../policy/exchange.ts";
import { errorAnswer } from "../error-answer.ts";
import { ServiceError } from "../errors.ts";
import { tunnelNotFound } from "./errors.ts";
import type { TunnelServices } from "./services.ts";
import { resolveHost, tunnelTarget } from "./tunnel-target.ts";

/** Serves a request addressed to `<label>.<TUNNEL_DOMAIN>`. */
export async function relayToTunnel(request: Request, env: Env, services: TunnelServices, label: string, afterResponse?: AfterResponse): Promise<Response> {
  const host = new URL(request.url).host;
  let resolved = await resolveHost(env, services.hosts, label, false);
  for (;;) {
    if (!resolved) return errorAnswer(tunnelNotFound(host), request);
    const { claim, cached } = resolved;
    let offline = false;
    const target = tunnelTarget(env, services, label, claim, host, () => {
      offline = true;
    });
    if (target instanceof ServiceError) return target.toResponse();
    const response = await services.runPolicy(request, env, target, afterResponse);
    // A cached host may point at a session that has since been replaced (the agent reconnected):
    // look again, and retry when nothing of the request was consumed.
    if (!offline || !cached || request.body !== null) return response;
    const again = await resolveHost(env, services.hosts, label, true);
    if (!again || again.claim.sessionId === claim.sessionId) return response;
    resolved = again;
  }
}
