/**
 * The windows of a `rate-limit` action as documents write them: `windows: [{capacity, rate} | {capacity, period,
 * offset?}]`, `tiers: [{when, windows}]`, and the seed's `capacity` + `rate` (a list of one); turned into the
 * limiter's rules (src/limiter/window-rules.ts) with the names the RateLimit fields give them.
 */

import { z } from "zod";
import { CALENDAR_PERIODS, MAX_OFFSET_MINUTES, periodSeconds } from "../../limiter/calendar-period.ts";
import { MAX_COST, MAX_WINDOW_MS, MAX_WINDOWS, MIN_WINDOW_MS, type WindowRule, windowKey } from "../../limiter/window-rules.ts";
import { parseDuration } from "../duration.ts";

export const MAX_CAPACITY = 2_000_000_000;
/** Most tiers of one action: each is a CEL condition evaluated per request until one matches. */
export const MAX_TIERS = 16;

export const capacitySchema = z
  .number({ error: (issue) => (issue.input === undefined ? "is required" : "must be an integer") })
  .int("must be an integer")
  .min(1, "must be at least 1")
  .max(MAX_CAPACITY, `must be at most ${MAX_CAPACITY}`);

/** A window of a `windows` list: whole seconds from 1s to 744h (31 days). */
const windowRateSchema = z.string({ error: "must be a duration string such as 1s, 60s or 24h" }).superRefine((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined) ctx.addIssue({ code: "custom", message: `must be a duration such as 1s, 10m or 24h (got '${text}')` });
  else if (ms % 1000 !== 0) ctx.addIssue({ code: "custom", message: "must be whole seconds" });
  else if (ms < MIN_WINDOW_MS) ctx.addIssue({ code: "custom", message: "must be at least 1s" });
  else if (ms > MAX_WINDOW_MS) ctx.addIssue({ code: "custom", message: "must be at most 744h (31 days)" });
});

const OFFSET = /^([+-])(\d{2}):(\d{2})$/;

function offsetMinutes(text: string | undefined): number {
  const match = OFFSET.exec(text ?? "+00:00");
  if (!match) return Number.NaN;
  return (match[1] === "-" ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3]));
}

const offsetSchema = z
  .string({ error: "must be an offset from UTC such as +02:00 or -05:30" })
  .refine((text) => Math.abs(offsetMinutes(text)) <= MAX_OFFSET_MINUTES && Number(text.slice(4)) < 60, {
    message: "must be an offset from UTC such as +02:00 or -05:30, at most 14 hours",
  });

const slidingWindowSchema = z.strictObject({
  capacity: capacitySchema.describe("Cost (requests, at cost 1) admitted within any window of `rate`."),
  rate: windowRateSchema.describe("Sliding window length: whole seconds from 1s to 744h (31 days)."),
});

const calendarWindowSchema = z.strictObject({
  capacity: capacitySchema.describe("Cost admitted within one calendar period."),
  period: z
    .enum(CALENDAR_PERIODS, { error: `must be one of ${CALENDAR_PERIODS.join(", ")}` })
    .describe("A quota that resets at the start of each hour, day, ISO week (Monday) or month."),
  offset: offsetSchema.optional().describe("The time zone offset the periods start in, e.g. +02:00; default UTC."),
});

export type WindowDocument = z.output<typeof slidingWindowSchema> | z.output<typeof calendarWindowSchema>;

export const windowsSchema = z
  .array(z.union([slidingWindowSchema, calendarWindowSchema], { error: "must be {capacity, rate} or {capacity, period, offset?}" }), {
    error: "must be a list of windows",
  })
  .min(1, "must have at least 1 window")
  .max(MAX_WINDOWS, `must have at most ${MAX_WINDOWS} windows`)
  .superRefine((windows, ctx) => {
    const keys = windows.map((window) => windowKey(ruleOf(window)));
    keys.forEach((key, index) => {
      if (keys.indexOf(key) !== index)
        ctx.addIssue({ code: "custom", path: [index], message: "repeats the length of an earlier window (keep the smaller capacity)" });
    });
  });

export const tiersSchema = z
  .array(
    z.strictObject({
      when: z
        .string({ error: "must be a CEL string" })
        .min(1, "must not be empty")
        .optional()
        .describe("CEL condition; the first tier whose condition holds applies. The last may have none."),
      windows: windowsSchema,
    }),
    { error: "must be a list of tiers" },
  )
  .min(1, "must have at least 1 tier")
  .max(MAX_TIERS, `must have at most ${MAX_TIERS} tiers`)
  .superRefine((tiers, ctx) => {
    tiers.forEach((tier, index) => {
      if (tier.when === undefined && index < tiers.length - 1)
        ctx.addIssue({ code: "custom", path: [index, "when"], message: "is required except on the last tier" });
    });
  });

export function ruleOf(window: WindowDocument): WindowRule {
  if ("rate" in window) return { capacity: window.capacity, windowMs: parseDuration(window.rate)! };
  return { capacity: window.capacity, period: window.period, offsetMinutes: offsetMinutes(window.offset) };
}

/** How a window is named after the action's name in RateLimit fields and 429 messages: `60s`, `month`, `day+02:00`. */
export function windowLabel(window: WindowDocument): string {
  if ("rate" in window) return window.rate;
  return window.offset && offsetMinutes(window.offset) !== 0 ? `${window.period}${window.offset}` : window.period;
}

/** The `w` of a window in the RateLimit-Policy field at `now`, in seconds. */
export function windowSeconds(rule: WindowRule, now: number): number {
  return "period" in rule ? periodSeconds(now, rule) : rule.windowMs / 1000;
}

/** `cost`: a fixed integer, or a CEL expression checked by the action against its phase. */
export const costSchema = z.union(
  [z.number().int("must be an integer").min(0, "must be at least 0").max(MAX_COST, `must be at most ${MAX_COST}`), z.string().min(1, "must not be empty")],
  { error: `must be an integer from 0 to ${MAX_COST} or a CEL expression` },
);
