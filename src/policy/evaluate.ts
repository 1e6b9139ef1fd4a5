/** Runs one phase of a compiled policy: entries in order, gated by their expressions, actions in order. */

import { headersChanged } from "./cel-activation.ts";
import type { CompiledEntry } from "./compile.ts";
import type { ActionServices, Exchange } from "./exchange.ts";

export interface EvaluationLog {
  expressionError(entry: CompiledEntry, source: string, message: string): void;
}

const consoleLog: EvaluationLog = {
  expressionError(entry, source, message) {
    console.warn(
      `traffic policy: expression ${JSON.stringify(source)}${entry.name ? ` of entry ${JSON.stringify(entry.name)}` : ""} failed (${message}); the entry is skipped`,
    );
  },
};

/**
 * Returns the Response that ends the phase, or undefined when every entry ran through.
 * An expression that fails to evaluate (a missing header indexed, say) counts as false.
 */
export async function runPhase(
  entries: readonly CompiledEntry[],
  exchange: Exchange,
  services: ActionServices,
  log: EvaluationLog = consoleLog,
): Promise<Response | undefined> {
  // Forwarding the request added headers to it (x-forwarded-*) since the inbound phase read them.
  if (exchange.response) headersChanged(exchange.request.headers);
  for (const entry of entries) {
    if (!matches(entry, exchange, log)) continue;
    for (const action of entry.actions) {
      const response = await action.run(exchange, services);
      if (response) return response;
    }
  }
  return undefined;
}

function matches(entry: CompiledEntry, exchange: Exchange, log: EvaluationLog): boolean {
  for (const expression of entry.expressions) {
    const result = expression.evaluate(exchange);
    if (result === true) continue;
    if (result !== false) log.expressionError(entry, expression.source, result.error);
    return false;
  }
  return true;
}
