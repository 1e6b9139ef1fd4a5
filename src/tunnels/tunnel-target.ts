/**
 * A tunnel as its traffic policy's target: the relay through its agent's session, and the tunnels its
 * `forward-internal` actions may reach, which are its own account's only. `https://<label>.internal` names the
 * tunnel serving host label <label> (the label an ngrok config's `url: https://<label>.internal` asks for).
 */

import type { Env } from "../env.ts";
import { errorAnswer } from "../error-answer.ts";
import { ServiceError } from "../errors.ts";
import { internalLabelOf } from "../policy/internal-url.ts";
import type { InternalTargets, PolicyTarget } from "../policy/target.ts";
import { clientRequestHeaders } from "./edge-streams.ts";
import type { CarriedRateLimit } from "../relay/edge-decision.ts";
import { edgeDecisionOf, sendEdgeDecision } from "./edge-decision-report.ts";
import { tunnelNotFound } from "./errors.ts";
import type { HostCache } from "./host-cache.ts";
import type { HostClaim } from "./host-claims.ts";
import { chooseMember } from "./pool-choice.ts";
import type { TunnelServices } from "./services.ts";
import { OFFLINE_HEADER, RELAY_PATH } from "./session-paths.ts";

/**
 * The tunnels serving `label` — one, or the members of its endpoint pool — (from this isolate's memory unless
 * `fresh`), and whether they came from there.
 */
export async function resolveHost(
  env: Env,
  hosts: HostCache,
  label: string,
  fresh: boolean,
): Promise<{ members: readonly HostClaim[]; cached: boolean } | undefined> {
  const known = fresh ? undefined : hosts.get(label);
  if (known) return { members: known, cached: true };
  // the stub's inferred type loses `unknown` fields (the policy) inside an array
  const members = (await env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label)).serving()) as HostClaim[];
  if (members.length === 0) {
    hosts.forget(label);
    return undefined;
  }
  hosts.remember(label, members);
  return { members, cached: false };
}

/**
 * The tunnel serving `label` under `claim` as a policy target, or the error its traffic gets (its policy does
 * not compile). `shownHost`: the host its "not found" answer names; `onOffline`: told when its session
 * turned out to have dropped the tunnel.
 */
export function tunnelTarget(
  env: Env,
  services: TunnelServices,
  label: string,
  claim: HostClaim,
  shownHost: string,
  onOffline: () => void,
): PolicyTarget | ServiceError {
  const policy = services.policies.get(claim.tunnelId, claim.trafficPolicy);
  if (policy instanceof ServiceError) return policy;
  const trails = services.policies.trails;
  const session = () => env.TUNNEL_SESSION.get(services.hosts.sessionId(label, claim, () => env.TUNNEL_SESSION.idFromName(claim.sessionId)));
  return {
    scope: `tunnel:${claim.tunnelId}`,
    policy,
    internal: accountTunnels(env, services, claim.accountId),
    async forward(original, exchange) {
      // The Host the local service sees is the one the client asked for, also after a forward-internal, unless
      // the tunnel's policy set another (add-headers host: localhost, as ngrok's examples do for local servers).
      const url = exchange.request.url;
      const host = exchange.request.headers.get("host") || url.host;
      // one string, not five searchParams.set calls (each re-serializes the whole URL)
      const relay =
        `https://tunnel-session${RELAY_PATH}?tunnel=${encodeURIComponent(claim.tunnelId)}&target=${encodeURIComponent(url.pathname + url.search)}` +
        `&client=${encodeURIComponent(exchange.clientIp)}&scheme=${encodeURIComponent(url.protocol.replace(":", ""))}&host=${encodeURIComponent(host)}` +
        carriedDecisions(trails.of(exchange)?.rateLimits);
      // the local service gets the client's Accept-Encoding, not the one the platform put in its place
      const headers = clientRequestHeaders(exchange.request.headers, original.cf);
      const answer = await session().fetch(relay, { method: original.method, headers, body: original.body });
      if (answer.headers.has(OFFLINE_HEADER)) {
        onOffline();
        services.hosts.forgetMember(label, claim.tunnelId);
        return errorAnswer(tunnelNotFound(shownHost), original);
      }
      return answer;
    },
    answeredItself(response, exchange) {
      const decision = edgeDecisionOf(trails, claim.tunnelId, response, exchange);
      if (decision) sendEdgeDecision(session(), decision, exchange);
    },
  };
}

/** The rate limits a relayed request was counted against, as the relay URL's `decisions` parameter (session-object.ts reads it). */
function carriedDecisions(rateLimits: readonly CarriedRateLimit[] | undefined): string {
  return rateLimits && rateLimits.length > 0 ? `&decisions=${encodeURIComponent(JSON.stringify(rateLimits))}` : "";
}

/**
 * The tunnels of `accountId`, by internal URL (a pooled label: one of its members, at random). Another
 * account's tunnel is answered as no tunnel at all, so a policy cannot tell whether a label it does not own is
 * in use.
 */
function accountTunnels(env: Env, services: TunnelServices, accountId: string): InternalTargets {
  return {
    async resolve(url) {
      const label = internalLabelOf(url.hostname);
      if (label === undefined) return undefined;
      const resolved = await resolveHost(env, services.hosts, label, false);
      // a pool's members are all of one account; the filter keeps that true here whatever a record says
      const own = resolved?.members.filter((claim) => claim.accountId === accountId) ?? [];
      if (own.length === 0) return undefined;
      return tunnelTarget(env, services, label, chooseMember(own), `${label}.internal`, () => {});
    },
  };
}
