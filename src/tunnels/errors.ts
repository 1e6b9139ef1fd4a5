/** The errors public clients and agents get from the tunnel side of the edge, as ServiceErrors (ERR_SVC_<code>). */

import { ServiceError } from "../errors.ts";
import { MAX_HEADER_FIELDS, MAX_HEADER_NAME_CHARS, MAX_HEADER_VALUE_CHARS, MAX_TARGET_CHARS, ResetCode, type HeadRefusal } from "../relay/index.ts";

/** Stable numbers; where ngrok has a number for the same case, it is used. */
export const TunnelErrorCode = {
  /** No online tunnel serves the host (ngrok ERR_NGROK_3200). */
  tunnelNotFound: 3200,
  /** The agent's session ended or broke while relaying (ngrok ERR_NGROK_3004: incomplete response). */
  agentUnavailable: 3004,
  /** The agent could not get an answer from the local service (ngrok ERR_NGROK_8012). */
  localServiceFailed: 8012,
  /** The agent endpoint is used wrongly or tunnels are off. */
  agentEndpoint: 3100,
  /** The session takes no more streams now (ngrok ERR_NGROK_716: a session's simultaneous connections limit). */
  sessionBusy: 716,
  /** The request head is past the relay's bounds (head-bounds.ts): answered at the edge, never relayed. */
  requestHeadRefused: 3210,
} as const;

/** What a visitor and the tunnel's owner each can do about ERR_SVC_3200 (ngrok's page says the same). */
const TUNNEL_OFFLINE_ADVICE = {
  title: "This tunnel is offline",
  steps: [
    "If someone gave you this link: the agent that served it has stopped or lost its connection. Try again later, or ask them for a new link (an agent that restarts without a fixed subdomain gets a new address).",
    "If this is your tunnel: start the agent (tollgate http <port>, or tollgate start <name>) and open the public URL it prints; check that this address is that URL.",
  ],
};

export function tunnelNotFound(host: string): ServiceError {
  return new ServiceError(
    404,
    TunnelErrorCode.tunnelNotFound,
    `Tunnel ${host} not found: no agent is online serving this host. Start the agent (tollgate agent http <port>) and use the public URL it prints.`,
    { details: { host }, advice: TUNNEL_OFFLINE_ADVICE },
  );
}

/** ERR_SVC_8012: the tunnel is online, the service behind the agent is not answering it. */
const LOCAL_SERVICE_FAILED_ADVICE = {
  title: "The tunnel's local service did not answer",
  steps: [
    "The tunnel is online, but the program it forwards to on its owner's machine did not answer. Try again in a moment.",
    "If this is your tunnel: start your local service on the address the agent forwards to (the agent prints it) and check that it answers there; the agent's log names the request.",
  ],
};

/** ERR_SVC_3004: the agent was relaying and stopped (its connection broke, or it reset the stream). */
const AGENT_UNAVAILABLE_ADVICE = {
  title: "The tunnel's agent did not finish the response",
  steps: [
    "The agent serving this tunnel lost its connection or gave up while answering. Reload the page in a moment.",
    "If this is your tunnel: check that the agent is still running and online; its log says why the request ended.",
  ],
};

/** The public client's answer when a stream fails before the agent sent a response head. */
export function streamFailure(code: string, message: string, host: string): ServiceError {
  switch (code) {
    case ResetCode.upstreamUnreachable:
    case ResetCode.upstreamTimeout:
    case ResetCode.upstreamError:
      return new ServiceError(502, TunnelErrorCode.localServiceFailed, `The tunnel agent could not get an answer from its local service: ${message}`, {
        details: { host, reason: code },
        advice: LOCAL_SERVICE_FAILED_ADVICE,
      });
    case ResetCode.unknownTunnel:
      return tunnelNotFound(host);
    default:
      return new ServiceError(502, TunnelErrorCode.agentUnavailable, `The tunnel agent did not complete the response: ${message}`, {
        details: { host, reason: code },
        advice: AGENT_UNAVAILABLE_ADVICE,
      });
  }
}

const HEAD_ADVICE: Record<number, { title: string }> = {
  414: { title: "The address is too long for this tunnel" },
  431: { title: "The request's header fields are too large for this tunnel" },
  501: { title: "The request method is not one this tunnel carries" },
};

/** ERR_SVC_3210: the edge does not relay a head its agent could not take (`refused`: which bound, in words). */
export function requestHeadRefused(refused: HeadRefusal, host: string): ServiceError {
  return new ServiceError(
    refused.status,
    TunnelErrorCode.requestHeadRefused,
    `The request to ${host} was not relayed to the tunnel's agent: ${refused.reason}.`,
    {
      details: { host, reason: refused.reason },
      advice: {
        title: HEAD_ADVICE[refused.status]?.title ?? "The request cannot go through this tunnel",
        steps: [
          `Tunnels carry request heads within fixed bounds: a target of at most ${MAX_TARGET_CHARS} characters, at most ${MAX_HEADER_FIELDS} header fields, names of at most ${MAX_HEADER_NAME_CHARS} and values of at most ${MAX_HEADER_VALUE_CHARS} characters.`,
          "Send the request again with a shorter address or fewer or smaller headers (large cookies are the usual cause).",
        ],
      },
    },
  );
}
