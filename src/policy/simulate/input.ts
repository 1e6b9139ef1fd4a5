/** What a simulation is asked: the candidate policy's text and the requests to run through it, validated with located errors. */

import { z } from "zod";
import {
  MAX_SIMULATED_BODY_CHARS,
  MAX_SIMULATED_CLIENT_IP_CHARS,
  MAX_SIMULATED_HEADER_CHARS,
  MAX_SIMULATED_HEADERS,
  MAX_SIMULATED_OFFSET_MS,
  MAX_SIMULATED_POLICY_CHARS,
  MAX_SIMULATED_POLICY_NESTING,
  MAX_SIMULATED_REQUESTS,
  MAX_SIMULATED_URL_CHARS,
} from "./bounds.ts";
import { nestsWithin } from "./text-nesting.ts";

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What `Headers` accepts as a value: no NUL or line break, nothing beyond Latin-1. */
const HEADER_VALUE = /^[^\0\r\n\u0100-\uffff]*$/;

/**
 * Header name → a value or a list of values, read as a list of pairs (a plain object would drop a header named
 * `__proto__`). Bounded in fields and characters before any value is looked at.
 */
const headersSchema = z
  .custom<object>(
    (value) => typeof value === "object" && value !== null && !Array.isArray(value),
    "must be a map of header names to a value or a list of values",
  )
  .transform((map, ctx): Array<[string, string]> => {
    const pairs: Array<[string, string]> = [];
    let chars = 0;
    for (const [name, given] of Object.entries(map)) {
      const values: unknown[] = Array.isArray(given) ? given : [given];
      if (pairs.length + values.length > MAX_SIMULATED_HEADERS) {
        ctx.addIssue({ code: "custom", message: `exceeds the limit of ${MAX_SIMULATED_HEADERS} header fields` });
        return z.NEVER;
      }
      if (!TOKEN.test(name)) {
        ctx.addIssue({ code: "custom", path: [name], message: "is not a header name (an HTTP token)" });
        continue;
      }
      for (const value of values) {
        if (typeof value !== "string" || !HEADER_VALUE.test(value)) {
          ctx.addIssue({
            code: "custom",
            path: [name],
            message: "must be a header value (text without line breaks, NUL or characters beyond U+00FF) or a list of them",
          });
          continue;
        }
        chars += name.length + value.length;
        pairs.push([name, value]);
      }
      if (chars > MAX_SIMULATED_HEADER_CHARS) {
        ctx.addIssue({ code: "custom", message: `exceeds the limit of ${MAX_SIMULATED_HEADER_CHARS} characters of header names and values` });
        return z.NEVER;
      }
    }
    return pairs;
  });

const urlSchema = z
  .string({ error: "must be a URL string" })
  .max(MAX_SIMULATED_URL_CHARS, `must be at most ${MAX_SIMULATED_URL_CHARS} characters`)
  .refine((text) => /^https?:\/\//i.test(text) && parses(text), "must be an absolute http:// or https:// URL");

function parses(text: string): boolean {
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}

const responseSchema = z.strictObject({
  // What a Response can be made with: a 1xx (an upgrade) has no response phase on the gateway either.
  status: z.int({ error: "must be an integer" }).min(200, "must be from 200 to 599").max(599, "must be from 200 to 599"),
  headers: headersSchema.optional(),
  /** The body as text, for a `settle_cost` that reads `res.body` (JSON). */
  body: z.string({ error: "must be a string" }).optional(),
});

const requestSchema = z.strictObject({
  method: z.string({ error: "must be a string" }).max(32, "must be at most 32 characters").regex(TOKEN, "must be an HTTP method token"),
  url: urlSchema,
  headers: headersSchema.optional(),
  client_ip: z
    .string({ error: "must be a string" })
    .max(MAX_SIMULATED_CLIENT_IP_CHARS, `must be at most ${MAX_SIMULATED_CLIENT_IP_CHARS} characters`)
    .default(""),
  at_ms: z
    .int({ error: "must be an integer number of milliseconds" })
    .min(0, "must not be negative")
    .max(MAX_SIMULATED_OFFSET_MS, `must be at most ${MAX_SIMULATED_OFFSET_MS} (31 days)`)
    .default(0),
  response: responseSchema.optional(),
});

export const simulationInputSchema = z
  .strictObject({
    policy: z
      .string({ error: "must be the policy's text (YAML or JSON)" })
      .max(MAX_SIMULATED_POLICY_CHARS, `must be at most ${MAX_SIMULATED_POLICY_CHARS} characters`)
      .refine((text) => nestsWithin(text, MAX_SIMULATED_POLICY_NESTING), `must not nest deeper than ${MAX_SIMULATED_POLICY_NESTING} levels`),
    /** Who would deploy it: a tunnel's policy (tenant, the default) or a route's (operator, larger documents allowed). */
    origin: z.enum(["tenant", "operator"], { error: "must be tenant or operator" }).default("tenant"),
    /** When `at_ms` 0 is, RFC 3339; calendar windows (day, month) start from it. Default: now. */
    start: z.iso.datetime({ offset: true, error: "must be an RFC 3339 date-time with an offset, e.g. 2025-01-31T12:00:00Z" }).optional(),
    requests: z
      .array(requestSchema, { error: "must be a list of requests" })
      .min(1, "must list at least 1 request")
      .max(MAX_SIMULATED_REQUESTS, `exceeds the limit of ${MAX_SIMULATED_REQUESTS} requests per simulation`),
  })
  .superRefine((input, ctx) => {
    let bodyChars = 0;
    input.requests.forEach((request, index) => {
      const previous = input.requests[index - 1];
      if (previous && request.at_ms < previous.at_ms) {
        ctx.addIssue({
          code: "custom",
          path: ["requests", index, "at_ms"],
          message: `must not be before the previous request's (${previous.at_ms}): requests run in order`,
        });
      }
      bodyChars += request.response?.body?.length ?? 0;
      if (bodyChars > MAX_SIMULATED_BODY_CHARS && bodyChars - (request.response?.body?.length ?? 0) <= MAX_SIMULATED_BODY_CHARS) {
        ctx.addIssue({
          code: "custom",
          path: ["requests", index, "response", "body"],
          message: `takes the response bodies past the limit of ${MAX_SIMULATED_BODY_CHARS} characters per simulation`,
        });
      }
    });
  });

export type SimulationInput = z.output<typeof simulationInputSchema>;
export type SimulatedRequest = SimulationInput["requests"][number];
