/**
 * Public traffic to a tunnel host: resolve the host to its tunnel, run the tunnel's traffic policy through
 * the gateway pipeline (so rate limits work as on routes), and relay through the agent's session.
 */

import type { Env } from "../env.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import { runThroughPolicy } from "../gateway/pipeline.ts";
import { compilePolicy, emptyPolicy, type CompiledPolicy } from "../policy/compile.ts";
import { formatIssue } from "../policy/issues.ts";
import { tunnelNotFound } from "./errors.ts";
import type { HostClaim } from "./host-object.ts";
import { OFFLINE_HEADER, RELAY_PATH } from "./session-object.ts";

/** How long an isolate trusts a resolved host; a stale entry costs one "offline" answer, then it is re-resolved. */
const HOST_CACHE_MS = 5000;
const CACHE_LIMIT = 1000;

const hosts = new Map<string, { claim: HostClaim; until: number }>();
const policies = new Map<string, CompiledPolicy | ServiceError>();

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (map.size >= CACHE_LIMIT) map.delete(map.keys().next().value!);
  map.set(key, value);
}

async function resolveHost(env: Env, label: string, fresh: boolean): Promise<{ claim: HostClaim; cached: boolean } | undefined> {
  const entry = hosts.get(label);
  if (!fresh && entry && entry.until > Date.now()) return { claim: entry.claim, cached: true };
  const claim = await env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label)).resolve();
  if (!claim) {
    hosts.delete(label);
    return undefined;
  }
  remember(hosts, label, { claim, until: Date.now() + HOST_CACHE_MS });
  return { claim, cached: false };
}

function policyOf(claim: HostClaim): CompiledPolicy | ServiceError {
  let policy = policies.get(claim.tunnelId);
  if (!policy) {
    if (claim.trafficPolicy === undefined || claim.trafficPolicy === null) policy = emptyPolicy;
    else {
      const compiled = compilePolicy(claim.trafficPolicy, { prefix: ["traffic_policy"] });
      policy = compiled.ok
        ? compiled.policy
        : new ServiceError(500, ErrorCode.internal, `The tunnel's traffic policy does not compile: ${compiled.issues.map(formatIssue).join("; ")}`);
    }
    remember(policies, claim.tunnelId, policy);
  }
  return policy;
}

/** Serves a request addressed to `<label>.<TUNNEL_DOMAIN>`. */
export async function relayToTunnel(request: Request, env: Env, label: string): Promise<Response> {
  const url = new URL(request.url);
  const host = url.host;
  let resolved = await resolveHost(env, label, false);
  for (;;) {
    if (!resolved) return tunnelNotFound(host).toResponse();
    const { claim, cached } = resolved;
    const policy = policyOf(claim);
    if (policy instanceof ServiceError) return policy.toResponse();
    let offline = false;
    const response = await runThroughPolicy(request, env, {
      scope: `tunnel:${claim.tunnelId}`,
      policy,
      async forward(original, exchange) {
        const relay = new URL(`https://tunnel-session${RELAY_PATH}`);
        relay.searchParams.set("tunnel", claim.tunnelId);
        relay.searchParams.set("target", url.pathname + url.search);
        relay.searchParams.set("client", exchange.clientIp);
        relay.searchParams.set("scheme", url.protocol.replace(":", ""));
        relay.searchParams.set("host", host);
        const session = env.TUNNEL_SESSION.get(env.TUNNEL_SESSION.idFromName(claim.sessionId));
        const answer = await session.fetch(relay, { method: original.method, headers: exchange.request.headers, body: original.body });
        if (answer.headers.has(OFFLINE_HEADER)) {
          offline = true;
          hosts.delete(label);
          return tunnelNotFound(host).toResponse();
        }
        return answer;
      },
    });
    // A cached host may point at a session that has since been replaced (the agent reconnected):
    // look again, and retry when nothing of the request was consumed.
    if (!offline || !cached || request.body !== null) return response;
    const again = await resolveHost(env, label, true);
    if (!again || again.claim.sessionId === claim.sessionId) return response;
    resolved = again;
  }
}
