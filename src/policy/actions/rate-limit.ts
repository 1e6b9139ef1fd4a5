/**
 * `rate-limit`: counts the request in its bucket's sliding window; over capacity it answers 429 with
 * retry-after, or with `enforce: false` only says so (`actions.svc.rate_limit.limited`) and lets it pass.
 */

import { z } from "zod";
import type { LimitOverride } from "../../limiter/override-match.ts";
import { closestToLimit } from "../../limiter/several-windows.ts";
import type { WindowDecision } from "../../limiter/sliding-window.ts";
import type { CountResult, Exchange, RateLimitEvent, RateLimitOutcome } from "../exchange.ts";
import { parseDuration } from "../duration.ts";
import { BOOL, STRING } from "../cel-types.ts";
import { isRateLimitPolicyName, MAX_RATELIMIT_HEADER_ACTIONS, MAX_RATELIMIT_POLICY_NAME } from "../rate-limit-fields.ts";
import { type CompiledAction, defineAction } from "./action.ts";
import { declareResults, ERROR_SHAPE, noError, type ResultError } from "./results.ts";
import { compileBucketKey, KEY_ERROR } from "./rate-limit-key.ts";
import { rateLimitedResponder } from "./rate-limit-response.ts";
import { awaitSettle, compileSettleCost, reservationId } from "./rate-limit-settle.ts";
import { boundedReason, COST_ERROR, invalidCostCheck, invalidCostResponse, invalidCostRetryAfter, MAX_COST_REASON_KEPT } from "./rate-limit-invalid-cost.ts";
import { choosePlan, costOf, type LimitPlan, overridePlan, type PlannedWindow, planLimits, withLimits } from "./rate-limit-plan.ts";
import { capacitySchema, costSchema, tiersSchema, windowLabel, windowSeconds, windowsSchema } from "./rate-limit-windows.ts";

export { canonicalCredentials } from "./rate-limit-key.ts";

const MIN_RATE_MS = 60_000;
const MAX_RATE_MS = 24 * 3_600_000;
const RATE_STEP_MS = 10_000;

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
    capacity: capacitySchema.optional().describe("Requests a bucket admits within any window of `rate` (the seed's form: a list of one window)."),
    rate: rateSchema.optional().describe("Window length: a duration string, a multiple of 10s from 60s to 24h."),
    windows: windowsSchema
      .optional()
      .describe(
        "Several windows instead of capacity + rate, decided all or nothing: [{capacity, rate}] sliding (1s to 744h) or [{capacity, period, offset?}] calendar quotas.",
      ),
    tiers: tiersSchema
      .optional()
      .describe(
        "Alternatives by CEL condition, each with its own windows; the first that holds applies. The bucket stays the action's and key's, so a tier switch keeps the count.",
      ),
    cost: costSchema
      .optional()
      .describe("What one request costs: an integer 0 to 1000000 or a CEL expression yielding one; default 1. 0 checks without consuming."),
    settle_cost: z
      .string({ error: "must be a CEL string" })
      .min(1, "must not be empty")
      .optional()
      .describe(
        "CEL over the response (res.status_code, res.headers, res.body: its JSON body, up to 64 KiB) whose integer 0 to 1000000 replaces the reserved cost in the windows the request was admitted in; on an error the estimate stays.",
      ),
    bucket_key: z
      .array(z.string())
      .min(1, "must have at least 1 element")
      .max(10, "must have at most 10 elements")
      .optional()
      .describe(
        "Values that name the bucket; default [conn.client_ip]. Each is req.host, conn.client_ip, req.headers['<lowercase-name>'], getReqHeader('<Header-Name>') or a CEL expression yielding a string (int, uint and bool are written as text).",
      ),
    scope: z
      .enum(["ingress", "global"], { error: "must be ingress or global" })
      .default("ingress")
      .describe("ingress: each ingress instance (Cloudflare location) counts on its own, as on ngrok; global: one count for all of them."),
    ratelimit_headers: z
      .boolean({ error: "must be a boolean" })
      .default(false)
      .describe("true: responses carry RateLimit-Policy and RateLimit header fields for this action (the IETF draft); off by default, as ngrok sends none."),
  })
  .superRefine((config, ctx) => {
    if (config.windows === undefined && config.tiers === undefined) {
      if (config.capacity === undefined) ctx.addIssue({ code: "custom", path: ["capacity"], message: "is required" });
      if (config.rate === undefined) ctx.addIssue({ code: "custom", path: ["rate"], message: "is required" });
    } else if (config.capacity !== undefined || config.rate !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [config.capacity !== undefined ? "capacity" : "rate"],
        message: "cannot be combined with windows or tiers: list the window in windows",
      });
    } else if (config.windows === undefined && config.tiers!.at(-1)?.when !== undefined) {
      ctx.addIssue({ code: "custom", path: ["tiers"], message: "must end with a tier without when, or come with windows for requests no tier matches" });
    }
  })
  .refine(
    (config) => {
      if (!config.ratelimit_headers || config.name === undefined) return true;
      const labels = [config.windows ?? [], ...(config.tiers ?? []).map((tier) => tier.windows)].flatMap((windows) =>
        windows.length > 1 ? windows.map(windowLabel) : [""],
      );
      return labels.every((label) => isRateLimitPolicyName(label ? `${config.name}/${label}` : config.name!));
    },
    {
      path: ["name"],
      message: `must be printable ASCII of at most ${MAX_RATELIMIT_POLICY_NAME} characters when ratelimit_headers is true (it names the policy in the RateLimit fields)`,
    },
  );

/** How a counted decision turns out, given `enforce`. */
function outcomeOf(allowed: boolean, enforce: boolean): RateLimitOutcome {
  if (allowed) return "allowed";
  return enforce ? "limited" : "shadow_limited";
}

export interface RateLimitVars {
  bucket_key: string;
  /** Over the limit: answered 429, or would have with `enforce: false`. */
  limited: boolean;
  error: ResultError;
}

declare module "./results.ts" {
  interface ActionVars {
    rate_limit: RateLimitVars;
  }
}

const rateLimitResults = declareResults<RateLimitVars>("rate_limit", { bucket_key: STRING, limited: BOOL, error: ERROR_SHAPE }, () => ({
  bucket_key: "",
  limited: false,
  error: noError(),
}));

export const rateLimitAction = defineAction({
  type: "rate-limit",
  config: rateLimitConfig,
  configOptional: false,
  results: rateLimitResults,
  simulation: { check: true, rateLimit: true },
  // The RateLimit fields carry a member per such action: their count bounds the fields' size.
  perPolicy: {
    max: MAX_RATELIMIT_HEADER_ACTIONS,
    counts: (config) => config.ratelimit_headers,
    path: ["ratelimit_headers"],
    message: `exceeds the limit of ${MAX_RATELIMIT_HEADER_ACTIONS} rate-limit actions with ratelimit_headers per policy`,
  },
  compile(config, context) {
    const name = config.name ?? context.position;
    const compiledKey = compileBucketKey(config.bucket_key ?? ["conn.client_ip"], context);
    if (!("key" in compiledKey)) return { path: ["bucket_key", compiledKey.index], message: compiledKey.message };
    const keyOf = compiledKey.key;
    const isGlobal = config.scope === "global";
    const planned = planLimits(config, name, context);
    if (!("plans" in planned)) return planned;
    const { plans, cost } = planned;
    const settle = compileSettleCost(config.settle_cost, context);
    if (settle && "path" in settle) return settle;
    const { enforce, ratelimit_headers: headers } = config;
    // A settled cost is a cost: its bucket is decided by the object request by request (no leases), as a weighted one.
    const weighted = !("fixed" in cost) || cost.fixed !== 1 || settle !== undefined;
    // One responder per window, its message fixed now: a flood answers it thousands of times a second.
    const responders = new WeakMap(
      plans.flatMap((plan) =>
        plan.windows.map((window): [PlannedWindow, (retryAfter: number) => Response] => [
          window,
          rateLimitedResponder(name, window.rule.capacity, window.label, weighted),
        ]),
      ),
    );
    const responderOf = (window: PlannedWindow) => {
      let responder = responders.get(window);
      if (!responder) {
        // An override's window: made on its first 429, kept while the override object lives.
        responder = rateLimitedResponder(name, window.rule.capacity, window.label, weighted);
        responders.set(window, responder);
      }
      return responder;
    };
    // Compiled once per override object (the isolate's copy keeps an unchanged override's object across refreshes).
    const overridePlans = new WeakMap<LimitOverride, LimitPlan>();
    const fixedCost = "fixed" in cost ? cost.fixed : 1;
    const action: CompiledAction = {
      type: "rate-limit",
      reportsRateLimits: true,
      async run(exchange, { counter, decisions, overrides, now: clock = Date.now }) {
        const keyValue = keyOf(exchange);
        const key = keyValue.shown;
        const vars = exchange.vars.rate_limit;
        vars.bucket_key = key;
        let plan = choosePlan(plans, exchange);
        const found = overrides?.find(exchange.scope, name, key, exchange.afterResponse);
        const override = found instanceof Promise ? await found : found;
        if (override) {
          let planned = overridePlans.get(override);
          if (!planned) overridePlans.set(override, (planned = overridePlan(override, name, fixedCost)));
          plan = planned;
        }
        if (!plan) {
          // No tier holds and none is unconditional: the schema refuses such a config, so this is never reached.
          vars.limited = false;
          return undefined;
        }
        const charged = costOf(cost, exchange);
        const bucket = isGlobal
          ? { scope: exchange.scope, action: name, key: keyValue.name, global: true }
          : { scope: exchange.scope, action: name, key: keyValue.name };
        const reserve = reservationId(settle);
        const result: CountResult = await counter.count(
          bucket,
          typeof charged !== "number"
            ? invalidCostCheck(plan)
            : "expression" in cost || settle
              ? { windows: plan.rules, cost: charged, key: plan.key, weighted: true, reserve }
              : overrides
                ? plan.keyed
                : plan.fixed,
          exchange.afterResponse,
        );
        if (settle) awaitSettle(settle, exchange, result);
        const reported = result.ok && result.decision.windows ? closestToLimit(result.decision.windows) : 0;
        const window = plan.windows[reported]!;
        const now = clock();
        const event = (outcome: RateLimitOutcome, remaining: number, retryAfter: number, errorCode = ""): RateLimitEvent => ({
          scope: exchange.scope,
          action: name,
          bucketKey: key,
          bucketId: result.bucketId,
          enforce,
          outcome,
          capacity: window.rule.capacity,
          windowMs: windowSeconds(window.rule, now) * 1000,
          remaining,
          retryAfter,
          errorCode,
        });
        if (typeof charged !== "number") {
          // Refused whatever the check answered (a failed check must not let garbage through uncounted).
          const retryAfter = invalidCostRetryAfter(result);
          vars.limited = true;
          vars.error = { code: COST_ERROR, message: boundedReason(charged.error, MAX_COST_REASON_KEPT) };
          decisions?.rateLimit(event(outcomeOf(false, enforce), result.ok ? result.decision.remaining : 0, retryAfter, COST_ERROR));
          if (headers && result.ok) pushFields(exchange, plan, result.decision, retryAfter, reported, now);
          return enforce ? invalidCostResponse(name, charged.error, retryAfter) : undefined;
        }
        if (!result.ok) {
          vars.limited = false;
          vars.error = { code: result.code, message: result.message };
          decisions?.rateLimit(event("error", 0, 0, result.code));
          return undefined;
        }
        const { decision } = result;
        vars.error = keyValue.error === undefined ? { code: "", message: "" } : { code: KEY_ERROR, message: keyValue.error };
        vars.limited = !decision.allowed;
        const retryAfter = decision.allowed ? 0 : Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
        decisions?.rateLimit(event(outcomeOf(decision.allowed, enforce), decision.remaining, retryAfter));
        if (headers) pushFields(exchange, plan, decision, retryAfter, reported, now);
        if (decision.allowed || !enforce) return undefined;
        return responderOf(window)(retryAfter);
      },
    };
    return withLimits(action, { name, plans, global: isGlobal, keyElements: (config.bucket_key ?? ["conn.client_ip"]).length });
  },
});

/**
 * The RateLimit members of one decision: every window of the plan in RateLimit-Policy, the reported one (closest
 * to its limit) also in RateLimit. `t`: when more quota is available; on a rejection exactly the retry-after.
 */
function pushFields(exchange: Exchange, plan: LimitPlan, decision: WindowDecision, retryAfter: number, reported: number, now: number): void {
  const fields = (exchange.rateLimitFields ??= []);
  plan.windows.forEach((window, index) => {
    const part = decision.windows?.[index];
    const remaining = decision.allowed ? (part?.remaining ?? decision.remaining) : 0;
    const refillMs = part?.refillMs ?? decision.refillMs;
    const resetSeconds = decision.allowed ? Math.max(1, Math.ceil(refillMs / 1000)) : retryAfter;
    const field = { policy: window.policy, quota: window.rule.capacity, windowSeconds: windowSeconds(window.rule, now), remaining, resetSeconds };
    fields.push(index === reported ? field : { ...field, policyOnly: true });
  });
}
