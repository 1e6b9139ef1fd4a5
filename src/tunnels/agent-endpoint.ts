/** The agent WebSocket endpoint: authenticates the API key and hands the connection to a new TunnelSession (`ts_…`). */

import type { Env } from "../env.ts";
import { ServiceError } from "../errors.ts";
import { ingressId } from "../ingress.ts";
import { settingsOf } from "../settings.ts";
import { compilePolicy, type CompiledPolicy } from "../policy/compile.ts";
import { newId } from "../ids.ts";
import { TunnelErrorCode } from "./errors.ts";
import { publicBaseOf } from "./hostnames.ts";
import { PROTOCOL_VERSION } from "../relay/index.ts";
import type { TunnelServices } from "./services.ts";
import { CONNECT_PATH, SESSION_INFO_HEADER } from "./session-paths.ts";
import type { SessionInfo } from "./session-store.ts";

/** Header in which the agent names the protocol version it speaks. */
export const PROTOCOL_HEADER = "tollgate-protocol";
/**
 * Handshakes one client IP may make per minute, counted before any key is checked: bounds key guessing
 * and reconnect storms. Agents back off on the 429 (its retry-after says how long).
 */
export const AGENT_HANDSHAKES_PER_MINUTE = 60;

function compileEndpointPolicy(): CompiledPolicy {
  const compiled = compilePolicy({
    inbound: [
      {
        name: "agent handshakes per IP",
        actions: [
          { type: "rate-limit", config: { name: "agent-endpoint-per-ip", capacity: AGENT_HANDSHAKES_PER_MINUTE, rate: "60s", bucket_key: ["conn.client_ip"] } },
        ],
      },
    ],
  });
  if (!compiled.ok) throw new Error(`the agent endpoint's built-in policy does not compile: ${JSON.stringify(compiled.issues)}`);
  return compiled.policy;
}

/** The traffic policy in front of the agent endpoint. */
export const agentEndpointPolicy: CompiledPolicy = compileEndpointPolicy();

export async function acceptAgentSession(request: Request, env: Env, services: Pick<TunnelServices, "authenticate">): Promise<Response> {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    return new ServiceError(426, TunnelErrorCode.agentEndpoint, "This is the tunnel agent endpoint: connect with a WebSocket, as `tollgate agent` does.", {
      headers: {
        upgrade: "websocket",
      },
    }).toResponse();
  }
  const spoken = request.headers.get(PROTOCOL_HEADER);
  if (spoken !== null && spoken !== String(PROTOCOL_VERSION)) {
    return new ServiceError(
      400,
      TunnelErrorCode.agentEndpoint,
      `The agent speaks tunnel protocol version ${spoken}, this edge speaks version ${PROTOCOL_VERSION}: use an agent of the same release as the edge.`,
      { details: { edge_protocol: PROTOCOL_VERSION, agent_protocol: spoken } },
    ).toResponse();
  }
  const settings = settingsOf(env);
  const domain = settings.tunnelDomain;
  if (domain === "") {
    return new ServiceError(503, TunnelErrorCode.agentEndpoint, "Tunnels are off on this edge: its TUNNEL_DOMAIN is not set.").toResponse();
  }
  const auth = await services.authenticate(request.headers.get("authorization"), env);
  if (!auth.ok) return auth.error.toResponse();

  const info: SessionInfo = {
    sessionId: newId("ts"),
    accountId: auth.accountId,
    region: ingressId(env, request),
    domain,
    publicBase: publicBaseOf(new URL(request.url)),
    heartbeatMs: settings.heartbeatMs,
    clientIp: agentIp(request),
    credentialId: auth.credentialId,
  };
  const headers = new Headers(request.headers);
  headers.delete("authorization");
  headers.set(SESSION_INFO_HEADER, JSON.stringify(info));
  const session = env.TUNNEL_SESSION.get(env.TUNNEL_SESSION.idFromName(info.sessionId));
  return session.fetch(new Request(`https://tunnel-session${CONNECT_PATH}`, { headers }));
}

/** Longest client address a session record keeps (an IPv6 address in text is at most 45 characters). */
const MAX_IP_LENGTH = 45;

/** The agent's address for its session record: `cf-connecting-ip` if it reads as an IP address, else "". */
function agentIp(request: Request): string {
  const ip = request.headers.get("cf-connecting-ip") ?? "";
  return ip.length <= MAX_IP_LENGTH && /^[0-9A-Fa-f:.]+$/.test(ip) ? ip : "";
}
