/** The 503 ERR_SVC_303 a request gets while its circuit is open, whichever way its breaker was configured. */

import { errorAnswer } from "../error-answer.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import type { BreakerView } from "./circuit.ts";

/** `open` or `half_open`: how the circuit stood when it refused the request. */
const BREAKER_STATE_HEADER = "x-tollgate-circuit";

/** Names a circuit in the answer: `of` ends "The circuit breaker of …"; `configuredBy` names what opened it for the operator. */
export interface CircuitLabel {
  readonly of: string;
  readonly configuredBy: string;
}

function circuitOpenAdvice(retryAfter: number, configuredBy: string) {
  return {
    title: "This service is pausing after errors",
    steps: [
      `The server behind this address failed too many requests, so the gateway is not sending it any for now. Try again in ${retryAfter} seconds.`,
      `If you run this gateway: ${configuredBy} opened; check the upstream's errors. One trial request after tripped_duration closes the circuit again when it succeeds.`,
    ],
  };
}

/**
 * The answer while open (`view.openUntil` read by the clock `now`): a page when `request` (the client's) prefers
 * HTML, the JSON envelope otherwise and when no request is given.
 */
export function circuitOpenAnswer(label: CircuitLabel, view: BreakerView, now: number, request?: Request): Response {
  const retryAfter = Math.max(1, Math.ceil((view.openUntil - now) / 1000));
  const error = new ServiceError(
    503,
    ErrorCode.circuitOpen,
    `The circuit breaker of ${label.of} is open after too many upstream errors; the upstream is not called. Retry after ${retryAfter}s.`,
    {
      details: { circuit: view.status, retry_after: retryAfter },
      headers: { "retry-after": String(retryAfter), [BREAKER_STATE_HEADER]: view.status },
      advice: circuitOpenAdvice(retryAfter, label.configuredBy),
    },
  );
  return request ? errorAnswer(error, request) : error.toResponse();
}
