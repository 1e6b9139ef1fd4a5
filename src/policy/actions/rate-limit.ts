/** `rate-limit`: counts the request in its bucket's sliding window; over capacity it answers 429 with retry-after. */

import { z } from "zod";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { clientIpBucket } from "../client-ip-bucket.ts";
import type { Exchange } from "../exchange.ts";
import { parseDuration } from "../duration.ts";
import { defineAction } from "./action.ts";

export const MAX_CAPACITY = 2_000_000_000;
const MIN_RATE_MS = 60_000;
const MAX_RATE_MS = 24 * 3_600_000;
const RATE_STEP_MS = 10_000;

const BUCKET_KEY_FORMS: ReadonlyArray<[RegExp, (match: RegExpMatchArray) => (exchange: Exchange) => string]> = [
  [/^req\.host$/, () => (exchange) => exchange.request.host],
  // Grouped: one bucket per IPv4 address, per IPv6 /64 (the CEL variable stays the exact address).
  [/^conn\.client_ip$/, () => (exchange) => clientIpBucket(exchange.clientIp)],
  [/^req\.headers\['([a-z0-9!#$%&*+.^_`|~-]+)'\]$/, ([, name]) => (exchange) => exchange.request.headers.get(name) ?? ""],
  [/^getReqHeader\('([A-Za-z0-9!#$%&*+.^_`|~-]+)'\)$/, ([, name]) => (exchange) => exchange.request.headers.get(name) ?? ""],
];

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

export const rateLimitConfig = z.strictObject({
  name: z
    .string()
    .min(1, "must not be empty")
    .max(1023, "must be shorter than 1024 characters")
    .optional()
    .describe("Names the buckets; differently named rate-limit actions count separately. Default: the action's position."),
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
});

export const rateLimitAction = defineAction({
  type: "rate-limit",
  config: rateLimitConfig,
  configOptional: false,
  compile(config, context) {
    const name = config.name ?? context.position;
    const readers = (config.bucket_key ?? ["conn.client_ip"]).map((expression) => bucketKeyReader(expression)!);
    const spec = { capacity: config.capacity, windowMs: parseDuration(config.rate)! };
    return {
      type: "rate-limit",
      async run(exchange, { counter }) {
        const parts = readers.map((read) => read(exchange));
        const key = parts.join(":");
        const vars = exchange.vars.rate_limit;
        vars.bucket_key = key;
        const result = await counter.count({ scope: exchange.scope, action: name, key: JSON.stringify(parts) }, spec);
        if (!result.ok) {
          vars.limited = false;
          vars.error = { code: result.code, message: result.message };
          return undefined;
        }
        vars.error = { code: "", message: "" };
        vars.limited = !result.decision.allowed;
        if (result.decision.allowed) return undefined;
        const retryAfter = Math.max(1, Math.ceil(result.decision.retryAfterMs / 1000));
        return new ServiceError(
          429,
          ErrorCode.rateLimited,
          `Rate limit exceeded: more than ${spec.capacity} requests in ${config.rate}. Retry after ${retryAfter}s.`,
          { rate_limit: name, retry_after: retryAfter },
          { "retry-after": String(retryAfter) },
        ).toResponse();
      },
    };
  },
});
