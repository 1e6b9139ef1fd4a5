/**
 * A request head the edge answered itself because the agent could not have decoded it (431, 414, 501: the relay's
 * bounds, src/relay/head-bounds.ts), told to the tunnel's agent as an edge decision, so its inspector and log show
 * the request that never reached it. Cut to the decision's own bounds: the head is, by definition, past the relay's.
 */

import { cut, type EdgeDecision, MAX_DECISION_HEADER_VALUE, MAX_DECISION_HEADERS, MAX_DECISION_TARGET } from "../relay/edge-decision.ts";
import type { HeadRefusal } from "../relay/index.ts";
import type { RelayRequest } from "./relay-request.ts";

/** What `answered_by.type` names: no entry of the tunnel's policy answered, the relay's bounds did. */
export const RELAY_BOUNDS_ANSWER = "relay-bounds";

export function refusedHeadDecision(request: RelayRequest, refused: HeadRefusal, at: number): EdgeDecision {
  const headers: Array<[string, string]> = [];
  request.headers.forEach((value, name) => {
    if (headers.length < MAX_DECISION_HEADERS) headers.push([cut(name, 255), cut(value, MAX_DECISION_HEADER_VALUE)]);
  });
  return {
    tunnel_id: request.tunnelId,
    at,
    method: cut(request.method, 31) || "?",
    target: cut(request.target, MAX_DECISION_TARGET),
    headers,
    client_addr: cut(request.clientAddr, 63),
    status: refused.status,
    answered_by: { phase: "inbound", entry: 0, action: 0, type: RELAY_BOUNDS_ANSWER },
    rate_limits: [],
    suppressed: 0,
  };
}
