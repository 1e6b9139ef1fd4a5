/**
 * Public traffic to a tunnel host: resolve the host to its tunnel, run the tunnel's traffic policy through
 * the gateway pipeline (so rate limits work as on routes), and relay through the agent's session.
 */

import type { Env } from "../env.ts";
import type { AfterResponse } from "../policy/exchange.ts";
import { errorAnswer } from "../error-answer.ts";
import { ServiceError } from "../errors.ts";
import { tunnelNotFound } from "./errors.ts";
import type { HostCache } from "./host-cache.ts";
import type { HostClaim } from "./host-claims.ts";
import type { TunnelServices } from "./services.ts";
import { clientRequestHeaders } from "./edge-streams.ts";
import { OFFLINE_HEADER, RELAY_PATH } from "./session-object.ts";

async function resolveHost(env: Env, hosts: HostCache, label: string, fresh: boolean): Promise<{ claim: HostClaim; cached: boolean } | undefined> {
  const known = fresh ? undefined : hosts.get(label);
  if (known) return { claim: known, cached: true };
  const claim = await env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label)).resolve();
  if (!claim) {
    hosts.forget(label);
    return undefined;
  }
  hosts.remember(label, claim);
  return { claim, cached: false };
}

/** Serves a request addressed to `<label>.<TUNNEL_DOMAIN>`. */
export async function relayToTunnel(request: Request, env: Env, services: TunnelServices, label: string, afterResponse?: AfterResponse): Promise<Response> {
  const url = new URL(request.url);
  const host = url.host;
  let resolved = await resolveHost(env, services.hosts, label, false);
  for (;;) {
    if (!resolved) return errorAnswer(tunnelNotFound(host), request);
    const { claim, cached } = resolved;
    const policy = services.policies.get(claim.tunnelId, claim.trafficPolicy);
    if (policy instanceof ServiceError) return policy.toResponse();
    let offline = false;
    const response = await services.runPolicy(
      request,
      env,
      {
        scope: `tunnel:${claim.tunnelId}`,
        policy,
        async forward(original, exchange) {
          // one string, not five searchParams.set calls (each re-serializes the whole URL)
          const relay =
            `https://tunnel-session${RELAY_PATH}?tunnel=${encodeURIComponent(claim.tunnelId)}&target=${encodeURIComponent(url.pathname + url.search)}` +
            `&client=${encodeURIComponent(exchange.clientIp)}&scheme=${encodeURIComponent(url.protocol.replace(":", ""))}&host=${encodeURIComponent(host)}`;
          const session = env.TUNNEL_SESSION.get(services.hosts.sessionId(label, claim, () => env.TUNNEL_SESSION.idFromName(claim.sessionId)));
          // the local service gets the client's Accept-Encoding, not the one the platform put in its place
          const headers = clientRequestHeaders(exchange.request.headers, request.cf);
          const answer = await session.fetch(relay, { method: original.method, headers, body: original.body });
          if (answer.headers.has(OFFLINE_HEADER)) {
            offline = true;
            services.hosts.forget(label);
            return errorAnswer(tunnelNotFound(host), request);
          }
          return answer;
        },
      },
      afterResponse,
    );
    // A cached host may point at a session that has since been replaced (the agent reconnected):
    // look again, and retry when nothing of the request was consumed.
    if (!offline || !cached || request.body !== null) return response;
    const again = await resolveHost(env, services.hosts, label, true);
    if (!again || again.claim.sessionId === claim.sessionId) return response;
    resolved = again;
  }
}
