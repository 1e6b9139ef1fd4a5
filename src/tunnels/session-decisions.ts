/**
 * The session object's side of edge decisions: a decision the Worker reports (edge-decision-report.ts) becomes an
 * edge_decision frame to the agent — if the agent asked for them in hello, the tunnel is the session's, and the
 * session's sampler lets it through; otherwise it is counted and the count rides on the next frame.
 */

import { carriedRateLimitsSchema, type CarriedRateLimit, EDGE_DECISIONS_PER_SECOND, type EdgeDecision, edgeDecisionSchema } from "../relay/edge-decision.ts";
import type { Frame } from "../relay/frames.ts";
import { DecisionSampler } from "./decision-sampler.ts";
import type { SessionStore } from "./session-store.ts";

/** Bytes of a reported decision's JSON the session object reads; a larger one is refused unread. */
export const MAX_DECISION_REPORT_BYTES = 128 * 1024;
/** Characters of the relay URL's `decisions` parameter read; a longer one is dropped (the request is relayed without). */
export const MAX_CARRIED_DECISIONS_CHARS = 16 * 1024;

/** Path of the session object that takes an edge decision (a JSON EdgeDecision) for its agent. */
export const DECISION_PATH = "/decision";

export class SessionDecisions {
  private readonly sampler: DecisionSampler;

  constructor(now: () => number = Date.now) {
    this.sampler = new DecisionSampler(EDGE_DECISIONS_PER_SECOND, now);
  }

  /** A POST of one decision from the Worker: 204 whether sent or counted, 400 / 413 for what is not one. */
  async receive(request: Request, store: SessionStore, send: (frame: Frame) => void): Promise<Response> {
    const length = Number(request.headers.get("content-length") ?? "0");
    if (length > MAX_DECISION_REPORT_BYTES) {
      await request.body?.cancel();
      return new Response("decision too large", { status: 413 });
    }
    const text = await request.text();
    if (text.length > MAX_DECISION_REPORT_BYTES) return new Response("decision too large", { status: 413 });
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return new Response("not JSON", { status: 400 });
    }
    const parsed = edgeDecisionSchema.safeParse(value);
    if (!parsed.success) return new Response(`not a decision: ${parsed.error.issues[0]?.path.join(".")}`, { status: 400 });
    this.offer(parsed.data, store, send);
    return new Response(null, { status: 204 });
  }

  /**
   * Sends `decision` as an edge_decision frame, or counts it for the next one (at most EDGE_DECISIONS_PER_SECOND
   * a tunnel): only to an agent that asked in hello, and only about the session's own tunnels.
   */
  offer(decision: EdgeDecision, store: SessionStore, send: (frame: Frame) => void): void {
    if (!store.meta()?.agentEdgeDecisions || store.tunnel(decision.tunnel_id) === undefined) return;
    const sampled = this.sampler.offer(decision.tunnel_id, decision.suppressed);
    if (sampled.send) send({ type: "edge_decision", ...decision, suppressed: sampled.suppressed });
  }
}

/** The relay URL's `decisions` parameter as the request head carries it; undefined when absent or not valid. */
export function carriedDecisionsOf(url: URL): CarriedRateLimit[] | undefined {
  const text = url.searchParams.get("decisions");
  if (text === null || text.length > MAX_CARRIED_DECISIONS_CHARS) return undefined;
  try {
    const parsed = carriedRateLimitsSchema.safeParse(JSON.parse(text));
    return parsed.success && parsed.data.length > 0 ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
