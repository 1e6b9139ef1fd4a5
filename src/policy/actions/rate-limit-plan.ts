/**
 * What a `rate-limit` action decides with, compiled once: its tiers (each a condition and windows; the top-level
 * windows or capacity + rate last, without condition) and its cost (fixed, or a CEL expression evaluated per
 * request and checked against the bounds).
 */

import type { LimitOverride } from "../../limiter/override-match.ts";
import type { WindowSpec } from "../../limiter/sliding-window.ts";
import { isCalendar, type LimitSpec, MAX_COST, type WindowRule } from "../../limiter/window-rules.ts";
import type { CompiledExpression, CompiledValueExpression } from "../compiled-expression.ts";
import type { Exchange } from "../exchange.ts";
import type { ActionContext } from "./action.ts";
import { ruleOf, type WindowDocument, windowLabel } from "./rate-limit-windows.ts";

export interface PlannedWindow {
  readonly rule: WindowRule;
  /** The policy name in RateLimit fields: the action's name, followed by `/label` when a tier has several windows. */
  readonly policy: string;
  /** How 429 messages name the window: the rate as written, or the period. */
  readonly label: string;
}

export interface LimitPlan {
  /** Absent: applies to every request that reaches it. */
  readonly when?: CompiledExpression;
  readonly windows: readonly PlannedWindow[];
  /** What the counter is asked at a fixed cost: the seed's WindowSpec for one sliding window at cost 1 without tiers. */
  readonly fixed: WindowSpec | LimitSpec;
  readonly rules: readonly WindowRule[];
  /** Names the rules, so an isolate notices a tier switch (bucket-memory.ts `switchRules`). */
  readonly key: string;
  /**
   * `fixed` always carrying `key`: what the counter is asked when overrides may change the rules, so an isolate
   * notices the switch to an override and back (the seed's `fixed` names no rules).
   */
  readonly keyed: LimitSpec;
}

export interface RateLimitShape {
  readonly capacity?: number;
  readonly rate?: string;
  readonly windows?: readonly WindowDocument[];
  readonly tiers?: readonly { readonly when?: string; readonly windows: readonly WindowDocument[] }[];
  readonly cost?: number | string;
}

type Located = { readonly path: ReadonlyArray<string | number>; readonly message: string };

export type CostPlan = { readonly fixed: number } | { readonly expression: CompiledValueExpression };

/** Tiers in order, then the fallback (windows, or capacity + rate), compiled; or the first CEL problem, located. */
export function planLimits(
  config: RateLimitShape,
  name: string,
  { phase, expressions }: Pick<ActionContext, "phase" | "expressions">,
): { plans: LimitPlan[]; cost: CostPlan } | Located {
  let cost: CostPlan = { fixed: 1 };
  if (typeof config.cost === "number") cost = { fixed: config.cost };
  else if (typeof config.cost === "string") {
    const compiled = expressions.value(config.cost, phase);
    if (!compiled.ok) return { path: ["cost"], message: compiled.message };
    cost = { expression: compiled.expression };
  }
  const plans: LimitPlan[] = [];
  const fixedCost = "fixed" in cost ? cost.fixed : 1;
  const alone = config.tiers === undefined;
  for (const [index, tier] of (config.tiers ?? []).entries()) {
    let when: CompiledExpression | undefined;
    if (tier.when !== undefined) {
      const compiled = expressions.condition(tier.when, phase);
      if (!compiled.ok) return { path: ["tiers", index, "when"], message: compiled.message };
      when = compiled.expression;
    }
    plans.push(plan(tier.windows, name, fixedCost, false, when));
  }
  const fallback =
    config.windows ?? (config.capacity !== undefined && config.rate !== undefined ? [{ capacity: config.capacity, rate: config.rate }] : undefined);
  if (fallback) plans.push(plan(fallback, name, fixedCost, alone && "fixed" in cost));
  return { plans, cost };
}

function plan(documents: readonly WindowDocument[], name: string, cost: number, mayBeSeed: boolean, when?: CompiledExpression): LimitPlan {
  const windows = documents.map((document) => ({
    rule: ruleOf(document),
    policy: documents.length > 1 ? `${name}/${windowLabel(document)}` : name,
    label: windowLabel(document),
  }));
  const rules = windows.map((window) => window.rule);
  const key = JSON.stringify(rules);
  const [only] = rules;
  const seed = mayBeSeed && cost === 1 && rules.length === 1 && only !== undefined && !isCalendar(only) && only.windowMs >= 60_000;
  const keyed = { windows: rules, cost, key };
  return { when, windows, rules, key, fixed: seed ? (only as WindowSpec) : keyed, keyed };
}

/**
 * The plan of an override (src/limiter/override-match.ts) of action `name` at a fixed `cost`: its windows named as
 * the action's would be. Never the seed's form: its `fixed` names its rules, so the switch is noticed.
 */
export function overridePlan(override: LimitOverride, name: string, cost: number): LimitPlan {
  const several = override.windows.length > 1;
  const windows = override.windows.map((rule, index) => {
    const label = override.labels[index] ?? "";
    return { rule, policy: several ? `${name}/${label}` : name, label };
  });
  const rules = windows.map((window) => window.rule);
  const key = JSON.stringify(rules);
  const keyed = { windows: rules, cost, key };
  return { windows, rules, key, fixed: keyed, keyed };
}

/** The plan that applies: the first whose condition holds (an evaluation error counts as false, as in entries). */
export function choosePlan(plans: readonly LimitPlan[], exchange: Exchange): LimitPlan | undefined {
  for (const plan of plans) {
    if (!plan.when) return plan;
    if (plan.when.evaluate(exchange) === true) return plan;
  }
  return undefined;
}

/** The cost of this request, or why it has none: an error, a value that is not an integer, or one out of 0 … MAX_COST. */
export function costOf(cost: CostPlan, exchange: Exchange): number | { error: string } {
  if ("fixed" in cost) return cost.fixed;
  const value = cost.expression.evaluate(exchange);
  if (typeof value === "bigint") {
    if (value >= 0n && value <= BigInt(MAX_COST)) return Number(value);
    return { error: `cost ${value} is outside 0 to ${MAX_COST}` };
  }
  if (typeof value === "number") {
    if (Number.isInteger(value) && value >= 0 && value <= MAX_COST) return value;
    return { error: `cost ${value} is not an integer from 0 to ${MAX_COST}` };
  }
  if (value !== null && typeof value === "object" && "error" in value && typeof value.error === "string") return { error: `cost: ${value.error}` };
  return { error: `cost must be an int, got ${typeof value === "string" ? "a string" : typeof value}` };
}

/** What a compiled rate-limit action says of its limits, for reading its buckets back (the management API). */
export interface ActionLimits {
  readonly name: string;
  /** Tiers in order, then the fallback (no `when`). */
  readonly plans: readonly LimitPlan[];
  /** `scope: global`: one bucket for every ingress instance. */
  readonly global: boolean;
  /** Elements of `bucket_key`: a bucket's key value has this many parts. */
  readonly keyElements: number;
}

/** `action` carrying its limits (read by `limitsOf`). */
export function withLimits<A extends object>(action: A, limits: ActionLimits): A & { readonly limits: ActionLimits } {
  return Object.assign(action, { limits });
}

/** The limits of a compiled action, when it is a rate-limit action. */
export function limitsOf(action: { readonly type: string }): ActionLimits | undefined {
  return action.type === "rate-limit" && "limits" in action ? (action.limits as ActionLimits) : undefined;
}
