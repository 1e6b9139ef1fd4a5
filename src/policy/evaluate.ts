/** Runs one phase of a compiled policy: entries in order, gated by their expressions, actions in order. */

import { activation, headersChanged, type Bindings } from "./cel-activation.ts";
import type { CompiledEntry } from "./compile.ts";
import type { ActionServices, Exchange } from "./exchange.ts";
import { type EvaluationLog, ExpressionErrorLog } from "./expression-error-log.ts";

export type { EvaluationLog };

/**
 * Where failures go when a caller names no log (tools, tests): bounded like the gateway's own (one line per
 * expression a second), never one line per failure.
 */
const fallbackLog: EvaluationLog = new ExpressionErrorLog();

/**
 * Returns the Response that ends the phase, or undefined when every entry ran through.
 * An expression that fails to evaluate (a missing header indexed, say) counts as false.
 * The variables expressions read are built once and shared by every expression up to the next entry whose
 * actions run (actions change them: result variables, headers), so entries that do not match cost only
 * their own evaluation.
 */
export async function runPhase(
  entries: readonly CompiledEntry[],
  exchange: Exchange,
  services: ActionServices,
  log: EvaluationLog = fallbackLog,
): Promise<Response | undefined> {
  // Forwarding the request added headers to it (x-forwarded-*) since the inbound phase read them.
  if (exchange.response) headersChanged(exchange.request.headers);
  let bindings: Bindings | undefined;
  for (const entry of entries) {
    if (entry.expressions.length > 0) {
      bindings ??= activation(exchange);
      if (!matches(entry, exchange, bindings, log)) continue;
    }
    bindings = undefined;
    for (const action of entry.actions) {
      const response = await action.run(exchange, services);
      if (response) return response;
    }
  }
  return undefined;
}

function matches(entry: CompiledEntry, exchange: Exchange, bindings: Bindings, log: EvaluationLog): boolean {
  for (const expression of entry.expressions) {
    const result = expression.evaluate(exchange, bindings);
    if (result === true) continue;
    if (result !== false) log.expressionError(entry, expression.source, result.error);
    return false;
  }
  return true;
}
