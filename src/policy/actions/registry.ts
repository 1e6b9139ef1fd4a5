/**
 * A set of action types: what the policy schema, the compiler, the CEL checker (the type of `actions`) and
 * the exchange's initial result variables are derived from. index.ts builds the one the gateway runs.
 */

import { record, type Type } from "../cel-types.ts";
import type { ActionDefinition } from "./action.ts";
import { type ActionResults, type ActionVars, shapeType } from "./results.ts";

/** ngrok names the result variables `actions.ngrok.*`; Tollgate's are `actions.svc.*`: both read the same values. */
const NAMESPACES = ["svc", "ngrok"] as const;

export class ActionRegistry {
  /** By type, in registration order (the JSON Schema lists them so). */
  readonly definitions: ReadonlyMap<string, ActionDefinition>;
  /** The declared result variables, in registration order. */
  readonly results: readonly ActionResults[];
  /** The CEL type of the variable `actions`. */
  readonly actionsType: Type;

  constructor(definitions: readonly ActionDefinition[]) {
    const byType = new Map<string, ActionDefinition>();
    const results = new Map<string, ActionResults>();
    for (const definition of definitions) {
      if (byType.has(definition.type)) throw new Error(`action type ${definition.type} is registered twice`);
      byType.set(definition.type, definition);
      const declared = definition.results;
      if (!declared) continue;
      if (results.has(declared.name)) throw new Error(`result variables actions.svc.${declared.name} are declared twice`);
      results.set(declared.name, declared);
    }
    this.definitions = byType;
    this.results = [...results.values()];
    const namespace = (name: string) => {
      const at = `actions.${name}`;
      return record(at, Object.fromEntries(this.results.map((declared) => [declared.name, shapeType(`${at}.${declared.name}`, declared.shape)])));
    };
    this.actionsType = record("actions", Object.fromEntries(NAMESPACES.map((name) => [name, namespace(name)])));
  }

  /** Every action's result variables as they are before it runs: a fresh set for each request. */
  initialVars(): ActionVars {
    const vars: Record<string, unknown> = {};
    for (const declared of this.results) vars[declared.name] = declared.initial();
    return vars as unknown as ActionVars;
  }
}
