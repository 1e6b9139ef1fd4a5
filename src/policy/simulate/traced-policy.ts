/**
 * A compiled policy whose entries and actions say what they did: each action of the engine's own compiled policy
 * is wrapped, so runPhase runs exactly what the gateway runs, and the wrapper notes that its entry matched (its
 * first action ran) and the action's outcome. Actions that would reach outside the simulation are not run.
 */

import type { ActionSimulation } from "../actions/action.ts";
import { actionRegistry, type CompiledAction } from "../actions/index.ts";
import type { ActionRegistry } from "../actions/registry.ts";
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
  /** Not run: it would reach outside the simulation (its definition's `simulation.skip`). The request goes on as if it had passed. */
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

/** The document's actions of one phase, as a list per entry (the document is valid: it compiled). */
function documentActions(document: unknown, phase: Phase): Array<Array<{ type: string; config: Record<string, unknown> }>> {
  const value = (document ?? {}) as Record<string, unknown>;
  const style = value.on_http_request !== undefined || value.on_http_response !== undefined ? "ngrok" : "tollgate";
  const entries = (value[PHASE_KEYS[style][phase]] ?? []) as Array<{ actions: Array<{ type: string; config?: Record<string, unknown> }> }>;
  return entries.map((entry) => entry.actions.map((action) => ({ type: action.type, config: action.config ?? {} })));
}

function outcomeOf(
  simulation: ActionSimulation<unknown> | undefined,
  response: Response | undefined,
  exchange: Exchange,
  sink: TraceSink,
): Pick<ActionTrace, "outcome" | "status" | "rate_limit" | "error"> {
  if (simulation?.rateLimit) {
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
    const refused = status === 401 || status === 403 || (simulation?.refusedStatuses?.includes(status) ?? false);
    return { outcome: refused ? "denied" : "answered", status };
  }
  const passed = simulation?.passed?.(exchange);
  if (passed) return { outcome: passed };
  return { outcome: simulation?.check ? "allowed" : "continued" };
}

function traced(
  action: CompiledAction,
  at: { phase: Phase; entry: number; action: number; name?: string },
  simulation: ActionSimulation<unknown> | undefined,
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
      to.action({ ...where, ...outcomeOf(simulation, response, exchange, to) });
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
 * request's); `document` is the value it was compiled from, with `actions` (default: the gateway's), whose
 * definitions say how each type is simulated.
 */
export function tracedPolicy(policy: CompiledPolicy, document: unknown, sink: () => TraceSink, actions: ActionRegistry = actionRegistry): CompiledPolicy {
  const phase = (name: Phase): CompiledEntry[] => {
    const fromDocument = documentActions(document, name);
    return policy[name].map((entry, entryIndex) => ({
      name: entry.name,
      expressions: entry.expressions.map((expression) => counted(expression, sink)),
      actions: entry.actions.map((action, actionIndex) => {
        const definition = actions.definitions.get(action.type);
        const simulation = definition?.simulation as ActionSimulation<unknown> | undefined;
        // The document compiled, so its config parses; read as the action reads it (defaults filled in).
        const skip =
          simulation?.skip && definition ? simulation.skip(definition.config.parse(fromDocument[entryIndex]?.[actionIndex]?.config ?? {})) : undefined;
        return traced(action, { phase: name, entry: entryIndex, action: actionIndex, name: entry.name }, simulation, skip, sink);
      }),
    }));
  };
  return { inbound: phase("inbound"), outbound: phase("outbound") };
}
