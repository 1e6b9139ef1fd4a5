/**
 * Meters CEL evaluation against the request's EvaluationBudget: every call through the function registry
 * is charged CALL_UNITS plus the size of what it takes (and the work beyond sizes cel-call-work.ts knows of)
 * before it runs, and the size of what it returns after; every comprehension is charged ITERATION_UNITS per
 * element before it starts. The weights make a unit cost about the same whatever the expression does; docs/security.md has the measurements. The planner implements
 * `&&`, `||`, `?:` and indexing itself (constant work each), so they are not charged.
 */

import { isCelList, isCelMap, type CelEnv, type CelValue } from "@bufbuild/cel";
import { extraWork } from "./cel-call-work.ts";
import { type Expr, mapChildren } from "./cel-tree.ts";
import type { EvaluationBudget } from "./evaluation-budget.ts";

type FuncResolver = CelEnv["funcs"];
type FuncGroup = NonNullable<ReturnType<FuncResolver["find"]>>;

/** The function every comprehension's range goes through once the expression is metered. */
const ITERATE = "@tollgate.iterate";

/** Units charged per call, on top of the sizes it takes and produces: a call costs something by itself (docs/security.md). */
export const CALL_UNITS = 8;
/** Units per element of a list or map taken or produced (an element costs several times a character). */
export const ELEMENT_UNITS = 8;
/** Units per comprehension iteration: the planner spends as much on each as on a hundred characters, whatever the body (docs/security.md). */
export const ITERATION_UNITS = 128;

/**
 * Units for a value taken or produced: characters of strings and bytes, ELEMENT_UNITS per element of a list
 * or map, nested values included (`==` and `in` compare them deeply). Stops counting past `cap`, so measuring
 * never costs more than the budget it is measured against.
 */
function sizeOf(value: unknown, cap: number): number {
  if (typeof value === "string") return value.length;
  if (value instanceof Uint8Array) return value.length;
  if (typeof value !== "object" || value === null) return 0;
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0 && total <= cap) {
    const item = pending.pop();
    if (typeof item === "string" || item instanceof Uint8Array) total += item.length;
    else if (isCelList(item)) {
      total += item.size * ELEMENT_UNITS;
      for (const element of item) pending.push(element);
    } else if (isCelMap(item) || item instanceof Map) {
      total += item.size * ELEMENT_UNITS;
      for (const [key, element] of item.entries()) pending.push(key, element);
    } else if (Array.isArray(item)) {
      total += item.length * ELEMENT_UNITS;
      pending.push(...item);
    }
  }
  return total;
}

/** Elements a comprehension will iterate over. */
function elementsOf(value: unknown): number {
  if (isCelList(value) || isCelMap(value) || value instanceof Map) return value.size;
  return Array.isArray(value) ? value.length : 0;
}

function meteredGroup(group: FuncGroup, budget: () => EvaluationBudget | undefined): FuncGroup {
  return {
    name: group.name,
    [Symbol.iterator]: () => group[Symbol.iterator](),
    call(id, target, args) {
      const meter = budget();
      if (!meter) return group.call(id, target, args);
      let taken = CALL_UNITS + extraWork(group.name, target, args) + sizeOf(target, meter.celWorkLeft());
      for (const arg of args) taken += sizeOf(arg, meter.celWorkLeft() - taken);
      meter.chargeCel(taken);
      const result = group.call(id, target, args);
      meter.chargeCel(sizeOf(result, meter.celWorkLeft()));
      return result;
    },
  };
}

/** Charges a comprehension's range before its loop runs, and hands the range on unchanged. */
function iterateGroup(budget: () => EvaluationBudget | undefined): FuncGroup {
  return {
    name: ITERATE,
    [Symbol.iterator]: () => [][Symbol.iterator](),
    call(_id, _target, args) {
      budget()?.chargeCel(CALL_UNITS + elementsOf(args[0]) * ITERATION_UNITS);
      return args[0] as CelValue;
    },
  };
}

/**
 * An environment whose function calls are charged to `budget()` (the budget of the request being evaluated;
 * undefined evaluates unmetered). Plan metered expressions (see `meterIterations`) with it.
 */
export function meteredEnv(env: CelEnv, budget: () => EvaluationBudget | undefined): CelEnv {
  const groups = new Map<string, FuncGroup | undefined>();
  const iterate = iterateGroup(budget);
  const funcs = {
    [Symbol.iterator]: () => env.funcs[Symbol.iterator](),
    find(name: string) {
      if (name === ITERATE) return iterate;
      if (!groups.has(name)) {
        const group = env.funcs.find(name);
        groups.set(name, group && meteredGroup(group, budget));
      }
      return groups.get(name);
    },
  };
  return { ...env, namespace: env.namespace, registry: env.registry, variables: env.variables, funcs: funcs as unknown as FuncResolver };
}

/**
 * The expression with every comprehension's range wrapped in a call of ITERATE, so its iterations are
 * charged. Works on a copy; the tree is small (MAX_EXPRESSION_NODES) and was checked before this runs.
 */
export function meterIterations(expr: Expr | undefined): Expr | undefined {
  if (!expr) return expr;
  return mapChildren(expr, (child, slot) => {
    const metered = meterIterations(child);
    if (slot !== "iterRange" || !metered) return metered;
    return { ...metered, exprKind: { case: "callExpr", value: { $typeName: "cel.expr.Expr.Call", function: ITERATE, args: [metered] } } } as Expr;
  });
}
