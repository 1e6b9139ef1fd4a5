/** `actions.svc.circuit_breaker.*` (and `actions.ngrok.…`): how the last circuit-breaker found its circuit. ngrok's sets none. */

import { BOOL, record, STRING, type Type } from "../cel-types.ts";
import type { CircuitBreakerVars } from "../exchange.ts";

/** The type of `<at>.circuit_breaker`, `at` being `actions.svc` or `actions.ngrok`. */
export function circuitBreakerType(at: string): Type {
  return record(`${at}.circuit_breaker`, { tripped: BOOL, state: STRING });
}

/** `results`: the exchange's `vars.circuit_breaker`, read by action-results.ts with the other actions' results. */
export function circuitBreakerResults({ tripped, state }: CircuitBreakerVars): Map<string, unknown> {
  return new Map<string, unknown>([
    ["tripped", tripped],
    ["state", state],
  ]);
}
