/**
 * Public traffic to a tunnel host: resolve the host to its tunnels (one, or an endpoint pool's members), pick
 * one, run that tunnel's traffic policy through the gateway pipeline (so rate limits work as on routes), and
 * relay through its agent's session.
 */

import type { Env } from "../env.ts";
import type { AfterResponse } from "../policy/exchange.ts";
import { errorAnswer } from "../error-answer.ts";
import { ServiceError } from "../errors.ts";
import { streamFailure, tunnelNotFound } from "./errors.ts";
import { MAX_POOL_MEMBERS } from "./host-claims.ts";
import { chooseMember } from "./pool-choice.ts";
import type { TunnelServices } from "./services.ts";
import { resolveHost, tunnelTarget } from "./tunnel-target.ts";

/**
 * Serves a request addressed to `<label>.<TUNNEL_DOMAIN>`. A tunnel whose session answers that it no longer
 * serves it (its agent went away since this isolate resolved the host, or a pool member left) is dropped,
 * and a request that consumed nothing is tried on what serves the host now: the other members the host object
 * named, or, when the list came from memory, a fresh one. A request with a body cannot be sent twice: when
 * other members remain it fails as a request in flight on a departed member does (502).
 */
export async function relayToTunnel(request: Request, env: Env, services: TunnelServices, label: string, afterResponse?: AfterResponse): Promise<Response> {
  const host = new URL(request.url).host;
  let resolved = await resolveHost(env, services.hosts, label, false);
  // tunnels found gone, each tried once: at most a pool's members, plus one fresh look
  const gone = new Set<string>();
  let answer: Response | undefined;
  for (;;) {
    const live = resolved?.members.filter((claim) => !gone.has(claim.tunnelId)) ?? [];
    if (!resolved || live.length === 0) return answer ?? errorAnswer(tunnelNotFound(host), request);
    const claim = chooseMember(live);
    let offline = false;
    const target = tunnelTarget(env, services, label, claim, host, () => {
      offline = true;
    });
    if (target instanceof ServiceError) return target.toResponse();
    answer = await services.runPolicy(request, env, target, afterResponse);
    if (!offline || gone.size >= MAX_POOL_MEMBERS) return answer;
    gone.add(claim.tunnelId);
    if (request.body !== null) {
      const others = live.length > 1;
      return others ? errorAnswer(streamFailure("member_left", "the pool member chosen for this request went offline; send it again", host), request) : answer;
    }
    if (resolved.cached) resolved = await resolveHost(env, services.hosts, label, true);
  }
}
