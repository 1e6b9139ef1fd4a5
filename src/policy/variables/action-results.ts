/**
 * `actions.svc.*`: the result variables of the last execution of each action type, as the exchange holds them
 * (`exchange.vars`, whose members the registered actions declare, each in its own file). `actions.ngrok.*` is
 * the same, under the name ngrok's documentation uses. Their type is the registry's (ActionRegistry.actionsType).
 */

import type { Exchange } from "../exchange.ts";
import type { VariableFamily } from "./family.ts";

/** A result value as CEL reads it: a record (a plain object) becomes a map; strings, booleans, lists and maps already are CEL values. */
function celValue(value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value) || value instanceof Map) return value;
  const fields = new Map<string, unknown>();
  for (const [field, inner] of Object.entries(value)) fields.set(field, celValue(inner));
  return fields;
}

function actionResults(exchange: Exchange): Map<string, unknown> {
  // Read once per snapshot (test/unit/policy/phase-variables.test.ts counts it).
  const namespace = celValue(exchange.vars);
  return new Map([
    ["svc", namespace],
    ["ngrok", namespace],
  ]);
}

/** The reader of `actions`; its type is not here but the registry's, which cel.ts checks against. */
export const actionResultVariables: VariableFamily = { types: {}, readers: { actions: actionResults } };
