/**
 * The RateLimit-Policy and RateLimit response header fields (draft-ietf-httpapi-ratelimit-headers-11):
 * Structured Field lists with one member per rate-limit decision of the request, e.g.
 *   RateLimit-Policy: "per-client";q=5;w=60
 *   RateLimit: "per-client";r=3;t=58
 */

import type { Exchange, RateLimitField } from "./exchange.ts";

/** Rate-limit actions of one policy that may send RateLimit fields: bounds the fields' size. */
export const MAX_RATELIMIT_HEADER_ACTIONS = 8;
/** Characters of a policy name sent in RateLimit fields. */
export const MAX_RATELIMIT_POLICY_NAME = 128;

/** What an sf-string can carry: printable ASCII (RFC 9651 §3.3.3). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

export function isRateLimitPolicyName(name: string): boolean {
  return name.length <= MAX_RATELIMIT_POLICY_NAME && PRINTABLE_ASCII.test(name);
}

function sfString(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export function rateLimitPolicyField(fields: readonly RateLimitField[]): string {
  return fields.map((field) => `${sfString(field.policy)};q=${field.quota};w=${field.windowSeconds}`).join(", ");
}

/** One member per decision: of an action's several windows only the one closest to its limit (the draft's rule). */
export function rateLimitField(fields: readonly RateLimitField[]): string {
  return fields
    .filter((field) => !field.policyOnly)
    .map((field) => `${sfString(field.policy)};r=${field.remaining};t=${field.resetSeconds}`)
    .join(", ");
}

/**
 * The response with the request's RateLimit fields added (the same response when there are none). It is
 * rebuilt around its body: headers of a response from `fetch` are immutable, and finding that out by
 * catching the TypeError costs more than the copy. Built from the response itself, its headers are copied
 * once (a Headers copy passed as init would be copied twice).
 */
export function withRateLimitFields(response: Response, exchange: Exchange): Response {
  const fields = exchange.rateLimitFields;
  if (!fields || fields.length === 0 || response.webSocket) return response;
  const withFields = new Response(response.body, response);
  withFields.headers.set("ratelimit-policy", rateLimitPolicyField(fields));
  withFields.headers.set("ratelimit", rateLimitField(fields));
  return withFields;
}
