/**
 * What the edge tells an agent about its policies' decisions: the rate limits a relayed request passed
 * (`request_head.decisions`), and requests to a tunnel host the edge answered itself (`edge_decision` frames).
 * Bounded here, checked on read at both ends like every frame (frames.ts).
 */

import { z } from "zod";

/** Version of the edge_decision frame an agent says it takes in hello (`edge_decisions`); an older agent says nothing and gets none. */
export const EDGE_DECISIONS_VERSION = 1;
/** Rate-limit decisions carried per request (a policy has at most 8 actions sending RateLimit fields; more are cut). */
export const MAX_CARRIED_RATE_LIMITS = 8;
/** Characters of a bucket key carried (longer ones are cut with "…" by the edge). */
export const MAX_CARRIED_BUCKET_KEY = 256;
/** Characters of the request target an edge_decision carries (longer ones are cut). */
export const MAX_DECISION_TARGET = 2048;
/** Request headers an edge_decision carries, each value cut to MAX_DECISION_HEADER_VALUE characters. */
export const MAX_DECISION_HEADERS = 64;
export const MAX_DECISION_HEADER_VALUE = 1024;
/**
 * edge_decision frames a session sends its agent per second; requests answered at the edge beyond it are
 * counted and the count rides on the next frame (`suppressed`). The Worker samples at the same rate per
 * isolate and tunnel before it calls the session object at all.
 */
export const EDGE_DECISIONS_PER_SECOND = 20;

/** One rate-limit action's decision on one request: its variables and RateLimit fields. */
export const carriedRateLimitSchema = z.object({
  /** The action's name (its RateLimit policy name). */
  name: z.string().max(128),
  /** `actions.svc.rate_limit.bucket_key`. */
  bucket_key: z.string().max(MAX_CARRIED_BUCKET_KEY + 1),
  /** `actions.svc.rate_limit.limited`. */
  limited: z.boolean(),
  /** allowed, limited, shadow_limited or error. */
  outcome: z.string().max(32),
  /** Whole seconds (0 unless limited), as in retry-after. */
  retry_after: z.number().int().min(0).max(1e9),
  remaining: z.number().int().min(0).max(1e12),
  capacity: z.number().int().min(0).max(1e12),
  window_s: z.number().min(0).max(1e9),
  /** `actions.svc.rate_limit.error.code`; '' when counting worked. */
  error_code: z.string().max(64).optional(),
});
export type CarriedRateLimit = z.output<typeof carriedRateLimitSchema>;

export const carriedRateLimitsSchema = z.array(carriedRateLimitSchema).max(MAX_CARRIED_RATE_LIMITS);

/** The action that answered a request at the edge. */
export const answeredBySchema = z.object({
  phase: z.enum(["inbound", "outbound"]),
  /** Positions in the phase's entries and the entry's actions, from 0. */
  entry: z.number().int().min(0).max(1024),
  entry_name: z.string().max(256).optional(),
  action: z.number().int().min(0).max(1024),
  /** The action's type: rate-limit, deny, restrict-ips, custom-response, circuit-breaker, … */
  type: z.string().max(64),
});
export type AnsweredBy = z.output<typeof answeredBySchema>;

export const edgeDecisionSchema = z.object({
  tunnel_id: z.string().max(128),
  /** When the edge answered, epoch ms. */
  at: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  method: z.string().min(1).max(32),
  target: z
    .string()
    .min(1)
    .max(MAX_DECISION_TARGET + 1),
  headers: z.array(z.tuple([z.string().min(1).max(256), z.string().max(MAX_DECISION_HEADER_VALUE + 1)])).max(MAX_DECISION_HEADERS),
  client_addr: z.string().max(64),
  status: z.number().int().min(100).max(599),
  answered_by: answeredBySchema,
  rate_limits: carriedRateLimitsSchema,
  /** Requests the edge answered itself on this tunnel since the previous frame that were counted, not sent. */
  suppressed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
});
export type EdgeDecision = z.output<typeof edgeDecisionSchema>;

/** `text` cut to `max` characters, marked with "…" when cut. */
export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
