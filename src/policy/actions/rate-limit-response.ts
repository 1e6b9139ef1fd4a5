/** The 429 of a rate-limit action, its text fixed when the policy compiles. */

import { ErrorCode, newOperationId, OPERATION_ID_HEADER } from "../../errors.ts";

/**
 * The 429 a rejected request gets: the envelope and headers `ServiceError.toResponse` renders, written
 * directly because a flood answers it thousands of times a second. The JSON text is assembled from parts
 * fixed when the policy compiles (only retry-after and the operation id change per request); a test parses
 * it and compares it with the envelope.
 */
export function rateLimitedResponder(name: string, capacity: number, rate: string, weighted: boolean): (retryAfter: number) => Response {
  // `"…Retry after ` and `s."`: JSON string text around the one number that changes.
  const what = weighted ? `a cost of ${capacity}` : `${capacity} requests`;
  const message = JSON.stringify(`Rate limit exceeded: more than ${what} in ${rate}. Retry after `).slice(0, -1);
  const head = `{"error_code":"ERR_SVC_${ErrorCode.rateLimited}","status_code":429,"msg":${message}`;
  const details = `s.","details":{"rate_limit":${JSON.stringify(name)},"retry_after":`;
  return (retryAfter) => {
    const operationId = newOperationId();
    const body = `${head}${retryAfter}${details}${retryAfter},"operation_id":"${operationId}"}}`;
    // Headers as an object: workerd converts an array of pairs measurably slower (docs/history/benchmark-2026-11-22-23.md).
    return new Response(body, {
      status: 429,
      headers: { "content-type": "application/json", "retry-after": String(retryAfter), [OPERATION_ID_HEADER]: operationId },
    });
  };
}
