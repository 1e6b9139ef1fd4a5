/**
 * Tells a tunnel's agent that the edge answered one of its requests itself (a rate limit's 429, a deny, a
 * restrict-ips, a custom response, an open circuit): sampled per isolate and tunnel first, then sent to the
 * session object after the response (which samples again per session before it writes an edge_decision frame).
 */

import type { Exchange } from "../policy/exchange.ts";
import { cut, type EdgeDecision, MAX_DECISION_HEADER_VALUE, MAX_DECISION_HEADERS, MAX_DECISION_TARGET } from "../relay/edge-decision.ts";
import type { DecisionTrails } from "./decision-trails.ts";
import { DECISION_PATH } from "./session-decisions.ts";

/**
 * The decision to report for `tunnelId`, or undefined when the sampler counted it instead (or no action of the
 * tunnel's policy answered: then there is nothing to say).
 */
export function edgeDecisionOf(trails: DecisionTrails, tunnelId: string, response: Response, exchange: Exchange): EdgeDecision | undefined {
  const trail = trails.of(exchange);
  if (trail?.answeredBy === undefined) return undefined;
  const sampled = trails.sampler.offer(tunnelId);
  if (!sampled.send) return undefined;
  const url = exchange.request.url;
  const headers: Array<[string, string]> = [];
  exchange.request.headers.forEach((value, name) => {
    if (headers.length < MAX_DECISION_HEADERS) headers.push([cut(name, 255), cut(value, MAX_DECISION_HEADER_VALUE)]);
  });
  return {
    tunnel_id: tunnelId,
    at: Date.now(),
    method: exchange.request.method.slice(0, 32),
    target: cut(url.pathname + url.search, MAX_DECISION_TARGET),
    headers,
    client_addr: exchange.clientIp.slice(0, 64),
    status: response.status,
    answered_by: trail.answeredBy,
    rate_limits: trail.rateLimits,
    suppressed: sampled.suppressed,
  };
}

/** Sends `decision` to the session object after the response went out; a failure is nobody's concern but the agent's view. */
export function sendEdgeDecision(session: { fetch(url: string, init: RequestInit): Promise<Response> }, decision: EdgeDecision, exchange: Exchange): void {
  const sent = session
    .fetch(`https://tunnel-session${DECISION_PATH}`, { method: "POST", body: JSON.stringify(decision), headers: { "content-type": "application/json" } })
    .then((answer) => answer.body?.cancel())
    .catch(() => undefined);
  if (exchange.afterResponse) exchange.afterResponse.waitUntil(sent);
}
