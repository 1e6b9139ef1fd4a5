/**
 * A `rate-limit` request whose cost is invalid at request time (an evaluation error, a string, a fraction, out of
 * 0 … 1,000,000): refused uncounted, so garbage never passes uncounted, and told what was wrong and when a request
 * with a valid cost could be admitted. The bucket is asked with a cost of 0, which checks without consuming: the
 * retry-after and the RateLimit fields are then the bucket's own, not a guess.
 */

import { ErrorCode, ServiceError } from "../../errors.ts";
import { type LimitSpec, MAX_COST } from "../../limiter/window-rules.ts";
import type { CountResult } from "../exchange.ts";
import type { LimitPlan } from "./rate-limit-plan.ts";

/** `actions.svc.rate_limit.error.code` of a request whose cost is invalid (refused, counted nowhere). */
export const COST_ERROR = "ERR_RATE_LIMIT_COST";
/** Characters of the reason a 429 shows: the reason may quote the cost's input, which the client chose. */
export const MAX_COST_REASON_SHOWN = 160;
/** Characters of the reason the error variables keep (a CEL error may quote a 10 MB header whole). */
export const MAX_COST_REASON_KEPT = 1024;

/** What the bucket is asked for a request whose cost is invalid: a check at cost 0, which counts nothing. */
export function invalidCostCheck(plan: LimitPlan): LimitSpec {
  return { windows: plan.rules, cost: 0, key: plan.key, weighted: true };
}

/** `reason` cut to `limit` characters, with what was cut said (no control characters: it may be a header's text). */
export function boundedReason(reason: string, limit: number): string {
  const printable = reason.replace(/[\u0000-\u001f\u007f]/g, " ");
  return printable.length <= limit ? printable : `${printable.slice(0, limit)}… (${printable.length - limit} more characters)`;
}

/**
 * Seconds until a request with a valid cost of 1 could be admitted: the check's wait when the bucket is limited;
 * else 1, as the cost alone stood in the way and a corrected request may come at once. A check that failed
 * (the object unreachable) says nothing of the bucket: 1 as well.
 */
export function invalidCostRetryAfter(result: CountResult): number {
  if (!result.ok || result.decision.allowed) return 1;
  return Math.max(1, Math.ceil(result.decision.retryAfterMs / 1000));
}

/** The 429 of an invalid cost: the usual envelope and code, its message saying what was wrong with the cost. */
export function invalidCostResponse(name: string, reason: string, retryAfter: number): Response {
  const shown = boundedReason(reason, MAX_COST_REASON_SHOWN);
  return new ServiceError(
    429,
    ErrorCode.rateLimited,
    `Rate limit refused the request: its cost is invalid (${shown}). Send a cost from 0 to ${MAX_COST}; a valid request may be admitted in ${retryAfter}s.`,
    { details: { rate_limit: name, retry_after: retryAfter, cost_error: shown }, headers: { "retry-after": String(retryAfter) } },
  ).toResponse();
}
