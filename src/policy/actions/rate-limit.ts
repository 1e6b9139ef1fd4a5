/**
 * `rate-limit`: counts the request in its bucket's sliding window; over capacity it answers 429 with
 * retry-after, or with `enforce: false` only says so (`actions.svc.rate_limit.limited`) and lets it pass.
 */

import { z } from "zod";
import { ErrorCode, newOperationId, OPERATION_ID_HEADER } from "../../errors.ts";
import { clientIpBucket } from "../client-ip-bucket.ts";
import type { Exchange, RateLimitEvent, RateLimitOutcome } from "../exchange.ts";
import { parseDuration } from "../duration.ts";
import { isRateLimitPolicyName, MAX_RATELIMIT_POLICY_NAME } from "../rate-limit-fields.ts";
import { defineAction } from "./action.ts";

export const MAX_CAPACITY = 2_000_000_000;
const MIN_RATE_MS = 60_000;
const MAX_RATE_MS = 24 * 3_600_000;
const RATE_STEP_MS = 10_000;

const BUCKET_KEY_FORMS: ReadonlyArray<[RegExp, (match: RegExpMatchArray) => (exchange: Exchange) => string]> = [
  [/^req\.host$/, () => (exchange) => exchange.request.host],
  // Grouped: one bucket per IPv4 address, per IPv6 /64 (the CEL variable stays the exact address).
  [/^conn\.client_ip$/, () => (exchange) => clientIpBucket(exchange.clientIp)],
  [/^req\.headers\['([a-z0-9!#$%&*+.^_`|~-]+)'\]$/, ([, name]) => headerReader(name)],
  [/^getReqHeader\('([A-Za-z0-9!#$%&*+.^_`|~-]+)'\)$/, ([, name]) => headerReader(name)],
];

/** Headers whose value starts with an auth scheme, which is case-insensitive (RFC 9110 §11.1). */
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization"]);

function headerReader(name: string): (exchange: Exchange) => string {
  const lower = name.toLowerCase();
  if (!CREDENTIAL_HEADERS.has(lower)) return (exchange) => exchange.request.headers.get(lower) ?? "";
  return (exchange) => canonicalCredentials(exchange.request.headers.get(lower) ?? "");
}

/**
 * `Bearer k`, `bearer k` and `BEARER\tk` are one credential: as a bucket key the scheme is lower-cased and
 * the white space after it folded, so spelling variants of one key cannot open several buckets.
 */
export function canonicalCredentials(value: string): string {
  const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]+(.*)$/.exec(value.trim());
  return match ? `${match[1].toLowerCase()} ${match[2]}` : value;
}

function bucketKeyReader(expression: string): ((exchange: Exchange) => string) | undefined {
  for (const [pattern, reader] of BUCKET_KEY_FORMS) {
    const match = expression.trim().match(pattern);
    if (match) return reader(match);
  }
  return undefined;
}

const rateSchema = z.string({ error: "must be a duration string such as 60s, 10m or 1h" }).superRefine((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined) ctx.addIssue({ code: "custom", message: `must be a duration such as 60s, 10m or 1h (got '${text}')` });
  else if (ms % RATE_STEP_MS !== 0) ctx.addIssue({ code: "custom", message: "must be a multiple of 10s" });
  else if (ms < MIN_RATE_MS) ctx.addIssue({ code: "custom", message: "must be at least 60s" });
  else if (ms > MAX_RATE_MS) ctx.addIssue({ code: "custom", message: "must be at most 24h" });
});

export const rateLimitConfig = z
  .strictObject({
    name: z
      .string()
      .min(1, "must not be empty")
      .max(1023, "must be shorter than 1024 characters")
      .optional()
      .describe("Names the buckets; differently named rate-limit actions count separately. Default: the action's position."),
    enforce: z
      .boolean({ error: "must be a boolean" })
      .default(true)
      .describe("false: count and set actions.svc.rate_limit.limited, but let over-limit requests through (no 429)."),
    algorithm: z
      .literal("sliding_window", { error: "must be sliding_window" })
      .default("sliding_window")
      .describe("Counting algorithm; only sliding_window is supported."),
    capacity: z
      .number({ error: (issue) => (issue.input === undefined ? "is required" : "must be an integer") })
      .int("must be an integer")
      .min(1, "must be at least 1")
      .max(MAX_CAPACITY, `must be at most ${MAX_CAPACITY}`)
      .describe("Requests a bucket admits within any window of `rate`."),
    rate: rateSchema.describe("Window length: a duration string, a multiple of 10s from 60s to 24h."),
    bucket_key: z
      .array(
        z.string().refine((expression) => bucketKeyReader(expression) !== undefined, {
          message: "must be req.host, conn.client_ip, req.headers['<lowercase-name>'] or getReqHeader('<Header-Name>')",
        }),
      )
      .min(1, "must have at least 1 element")
      .max(10, "must have at most 10 elements")
      .optional()
      .describe("Values that name the bucket; default [conn.client_ip]."),
    ratelimit_headers: z
      .boolean({ error: "must be a boolean" })
      .default(false)
      .describe("true: responses carry RateLimit-Policy and RateLimit header fields for this action (the IETF draft); off by default, as ngrok sends none."),
  })
  .refine((config) => !config.ratelimit_headers || config.name === undefined || isRateLimitPolicyName(config.name), {
    path: ["name"],
    message: `must be printable ASCII of at most ${MAX_RATELIMIT_POLICY_NAME} characters when ratelimit_headers is true (it names the policy in the RateLimit fields)`,
  });

/**
 * The 429 a rejected request gets: the envelope and headers `ServiceError.toResponse` renders, written
 * directly because a flood answers it thousands of times a second. The JSON text is assembled from parts
 * fixed when the policy compiles (only retry-after and the operation id change per request); a test parses
 * it and compares it with the envelope.
 */
function rateLimitedResponder(name: string, capacity: number, rate: string): (retryAfter: number) => Response {
  // `"…Retry after ` and `s."`: JSON string text around the one number that changes.
  const message = JSON.stringify(`Rate limit exceeded: more than ${capacity} requests in ${rate}. Retry after `).slice(0, -1);
  const head = `{"error_code":"ERR_SVC_${ErrorCode.rateLimited}","status_code":429,"msg":${message}`;
  const details = `s.","details":{"rate_limit":${JSON.stringify(name)},"retry_after":`;
  return (retryAfter) => {
    const operationId = newOperationId();
    const body = `${head}${retryAfter}${details}${retryAfter},"operation_id":"${operationId}"}}`;
    // Headers as an object: workerd converts an array of pairs measurably slower (about 5 µs a response).
    return new Response(body, {
      status: 429,
      headers: { "content-type": "application/json", "retry-after": String(retryAfter), [OPERATION_ID_HEADER]: operationId },
    });
  };
}

/** How a counted decision turns out, given `enforce`. */
function outcomeOf(allowed: boolean, enforce: boolean): RateLimitOutcome {
  if (allowed) return "allowed";
  return enforce ? "limited" : "shadow_limited";
}

export const rateLimitAction = defineAction({
  type: "rate-limit",
  config: rateLimitConfig,
  configOptional: false,
  compile(config, context) {
    const name = config.name ?? context.position;
    const readers = (config.bucket_key ?? ["conn.client_ip"]).map((expression) => bucketKeyReader(expression)!);
    const spec = { capacity: config.capacity, windowMs: parseDuration(config.rate)! };
    const windowSeconds = spec.windowMs / 1000;
    const { enforce, ratelimit_headers: headers } = config;
    const rateLimited = rateLimitedResponder(name, spec.capacity, config.rate);
    return {
      type: "rate-limit",
      async run(exchange, { counter, decisions }) {
        const parts = readers.map((read) => read(exchange));
        const key = parts.join(":");
        const vars = exchange.vars.rate_limit;
        vars.bucket_key = key;
        const result = await counter.count({ scope: exchange.scope, action: name, key: JSON.stringify(parts) }, spec, exchange.afterResponse);
        const event = (outcome: RateLimitOutcome, remaining: number, retryAfter: number, errorCode = ""): RateLimitEvent => ({
          scope: exchange.scope,
          action: name,
          bucketKey: key,
          bucketId: result.bucketId,
          enforce,
          outcome,
          capacity: spec.capacity,
          windowMs: spec.windowMs,
          remaining,
          retryAfter,
          errorCode,
        });
        if (!result.ok) {
          vars.limited = false;
          vars.error = { code: result.code, message: result.message };
          decisions?.rateLimit(event("error", 0, 0, result.code));
          return undefined;
        }
        const { decision } = result;
        vars.error = { code: "", message: "" };
        vars.limited = !decision.allowed;
        const retryAfter = decision.allowed ? 0 : Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
        decisions?.rateLimit(event(outcomeOf(decision.allowed, enforce), decision.remaining, retryAfter));
        if (headers) {
          // t: when more quota is available; on a rejection exactly the retry-after, as the draft asks.
          const resetSeconds = decision.allowed ? Math.max(1, Math.ceil(decision.refillMs / 1000)) : retryAfter;
          (exchange.rateLimitFields ??= []).push({ policy: name, quota: spec.capacity, windowSeconds, remaining: decision.remaining, resetSeconds });
        }
        if (decision.allowed || !enforce) return undefined;
        return rateLimited(retryAfter);
      },
    };
  },
});
