/**
 * A compiled policy whose entries and actions say what they did: each action of the engine's own compiled policy
 * is wrapped, so runPhase runs exactly what the gateway runs, and the wrapper notes that its entry matched (its
 * first action ran) and the action's outcome. Actions that would reach outside the simulation are not run.
 */

import type { CompiledAction } from "../actions/index.ts";
import type { CompiledExpression } from "../cel.ts";
import type { CompiledEntry, CompiledPolicy } from "../compile.ts";
import type { ActionServices, Exchange, Phase, RateLimitEvent } from "../exchange.ts";
import { PHASE_KEYS } from "../schema.ts";

/** What one action did to one request. */
export type ActionOutcome =
  /** A check (rate-limit, restrict-ips, basic-auth, jwt-validation, circuit-breaker) let the request on. */
  | "allowed"
  /** rate-limit answered 429. */
  | "limited"
  /** rate-limit with `enforce: false` found the bucket over its limit and let the request on. */
  | "shadow_limited"
  /** restrict-ips with `enforce: false` found the address not allowed and let the request on. */
  | "shadow_denied"
  /** A check answered 401 or 403 (or verify-webhook 413). */
  | "denied"
  /** The action answered the request itself (custom-response, redirect) or replaced the response. */
  | "answered"
  /** An action that changes the exchange (headers, url-rewrite, set-vars, log) ran. */
  | "continued"
  /** Counting failed (the request proceeds, as live) or the action threw. */
  | "error"
  /** Not run: it would reach outside the simulation (see `NOT_SIMULATED`). The request goes on as if it had passed. */
  | "not_simulated";

export interface ActionTrace {
  phase: Phase;
  entry: number;
  action: number;
  type: string;
  outcome: ActionOutcome;
  /** The status of the answer the action gave, when it gave one. */
  status?: number;
  /** rate-limit: the action's name, the bucket key shown, what remains, whole seconds to wait (limited). */
  rate_limit?: { name: string; bucket_key: string; remaining: number; retry_after: number; capacity: number; window_s: number };
  error?: { code: string; message: string };
  note?: string;
}

export interface EntryMatch {
  phase: Phase;
  entry: number;
  name?: string;
}

/** Where the current request's records go; replaced per request by the simulation. */
export interface TraceSink {
  /** An expression of an entry was evaluated (whatever it gave). */
  evaluated(): void;
  matched(match: EntryMatch): void;
  action(trace: ActionTrace): void;
  /** The rate-limit event of the action running now (the DecisionSink hands it here). */
  lastRateLimit: RateLimitEvent | undefined;
}

/** Why an action type is not run, from its config in the document; undefined: it is run. */
const NOT_SIMULATED: Record<string, (config: Record<string, unknown>) => string | undefined> = {
  "forward-internal": () => "forward-internal sends the request to another endpoint: not simulated",
  "verify-webhook": () => "verify-webhook checks a signature over the body with a timestamp against the clock: not simulated",
  "jwt-validation": (config) => {
    const sources = ((config.jws as Record<string, unknown> | undefined)?.keys as Record<string, unknown> | undefined)?.sources as
      | Record<string, unknown>
      | undefined;
    const urls = sources?.additional_jkus;
    return Array.isArray(urls) && urls.length > 0 ? "jwt-validation fetches its JWKS from a URL: not simulated" : undefined;
  },
};

const CHECKS = new Set(["rate-limit", "restrict-ips", "basic-auth", "jwt-validation", "circuit-breaker", "verify-webhook"]);

/** The document's actions of one phase, as a list per entry (the document is valid: it compiled). */
function documentActions(document: unknown, phase: Phase): Array<Array<{ type: string; config: Record<string, unknown> }>> {
  const value = (document ?? {}) as Record<string, unknown>;
  const style = value.on_http_request !== undefined || value.on_http_response !== undefined ? "ngrok" : "tollgate";
  const entries = (value[PHASE_KEYS[style][phase]] ?? []) as Array<{ actions: Array<{ type: string; config?: Record<string, unknown> }> }>;
  return entries.map((entry) => entry.actions.map((action) => ({ type: action.type, config: action.config ?? {} })));
}

function outcomeOf(
  type: string,
  response: Response | undefined,
  exchange: Exchange,
  sink: TraceSink,
): Pick<ActionTrace, "outcome" | "status" | "rate_limit" | "error"> {
  if (type === "rate-limit") {
    const event = sink.lastRateLimit;
    const vars = exchange.vars.rate_limit;
    const error = vars.error.code ? { error: { ...vars.error } } : {};
    if (!event) return { outcome: response ? "limited" : "allowed", status: response?.status, ...error };
    const rate_limit = {
      name: event.action,
      bucket_key: event.bucketKey,
      remaining: event.remaining,
      retry_after: event.retryAfter,
      capacity: event.capacity,
      window_s: event.windowMs / 1000,
    };
    return { outcome: event.outcome, status: response?.status, rate_limit, ...error };
  }
  if (response) {
    const status = response.status;
    const refused = status === 401 || status === 403 || (type === "verify-webhook" && status === 413);
    return { outcome: refused ? "denied" : "answered", status };
  }
  if (type === "restrict-ips" && exchange.vars.restrict_ips.denied) return { outcome: "shadow_denied" };
  return { outcome: CHECKS.has(type) ? "allowed" : "continued" };
}

function traced(
  action: CompiledAction,
  at: { phase: Phase; entry: number; action: number; name?: string },
  skip: string | undefined,
  sink: () => TraceSink,
): CompiledAction {
  return {
    type: action.type,
    async run(exchange: Exchange, services: ActionServices) {
      const to = sink();
      if (at.action === 0) to.matched({ phase: at.phase, entry: at.entry, ...(at.name !== undefined ? { name: at.name } : {}) });
      const where = { phase: at.phase, entry: at.entry, action: at.action, type: action.type };
      if (skip) {
        to.action({ ...where, outcome: "not_simulated", note: skip });
        return undefined;
      }
      to.lastRateLimit = undefined;
      let response: Response | undefined;
      try {
        response = await action.run(exchange, services);
      } catch (error) {
        // The gateway would answer 500 here; the simulation says why and ends the phase the same way.
        to.action({ ...where, outcome: "error", error: { code: "ERR_ACTION_FAILED", message: (error as Error).message } });
        return new Response(null, { status: 500 });
      }
      to.action({ ...where, ...outcomeOf(action.type, response, exchange, to) });
      return response;
    },
  };
}

/** `expression`, counting its evaluations into `sink()`. */
function counted(expression: CompiledExpression, sink: () => TraceSink): CompiledExpression {
  return {
    source: expression.source,
    patterns: expression.patterns,
    evaluate(exchange, bindings) {
      sink().evaluated();
      return expression.evaluate(exchange, bindings);
    },
  };
}

/**
 * `policy` with every action traced and every expression evaluation counted into `sink()` (the current
 * request's); `document` is the value it was compiled from.
 */
export function tracedPolicy(policy: CompiledPolicy, document: unknown, sink: () => TraceSink): CompiledPolicy {
  const phase = (name: Phase): CompiledEntry[] => {
    const fromDocument = documentActions(document, name);
    return policy[name].map((entry, entryIndex) => ({
      name: entry.name,
      expressions: entry.expressions.map((expression) => counted(expression, sink)),
      actions: entry.actions.map((action, actionIndex) => {
        const config = fromDocument[entryIndex]?.[actionIndex]?.config ?? {};
        const skip = NOT_SIMULATED[action.type]?.(config);
        return traced(action, { phase: name, entry: entryIndex, action: actionIndex, name: entry.name }, skip, sink);
      }),
    }));
  };
  return { inbound: phase("inbound"), outbound: phase("outbound") };
}
