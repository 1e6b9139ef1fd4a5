/**
 * The load-time type checker of policy expressions (@bufbuild/cel's own checker types only constants and
 * identifiers). Gives every node a type from the declared variables and the function overloads of the
 * environment, so `res.status_code < '200'` is a load error rather than a false on every request. What only
 * the request can tell (an absent header indexed, a `dyn` value) is left to request time.
 */

import type { CelEnv, parse } from "@bufbuild/cel";
import { assignable, BOOL, comparable, display, DOUBLE, DYN, fromCelType, INT, join, list, map, scalar, STRING, type Type } from "./cel-types.ts";

type Expr = ReturnType<typeof parse>["expr"];
type Call = Extract<NonNullable<Expr>["exprKind"], { case: "callExpr" }>["value"];

class TypeProblem extends Error {}

export interface CheckContext {
  /** A variable's type by name, hidden ones (`@req.url`) included; undefined for none. */
  readonly variable: (name: string) => Type | undefined;
  /** What an unknown variable's message lists. */
  readonly visible: readonly string[];
  readonly funcs: CelEnv["funcs"];
  /** The message for a name declared only in the other phase (`res`, `getResHeader`), if any. */
  readonly otherPhase: (name: string) => string | undefined;
}

const OPERATORS: Readonly<Record<string, string>> = {
  "_+_": "+",
  "_-_": "-",
  "_*_": "*",
  "_/_": "/",
  "_%_": "%",
  "_<_": "<",
  "_<=_": "<=",
  "_>_": ">",
  "_>=_": ">=",
  "-_": "-",
  "!_": "!",
  "@in": "in",
};

/** The type of `expr`, or what is wrong with it. The tree was bounded (nodes, nesting) before this runs. */
export function checkTypes(expr: Expr | undefined, context: CheckContext): { ok: true; type: Type } | { ok: false; message: string } {
  try {
    return { ok: true, type: typeOf(expr, context, new Map()) };
  } catch (error) {
    if (error instanceof TypeProblem) return { ok: false, message: error.message };
    throw error;
  }
}

function fail(message: string): never {
  throw new TypeProblem(message);
}

/** `req.url.path` → "req.url.path"; undefined when the chain does not start at an identifier. */
function chainText(expr: Expr | undefined): string | undefined {
  const kind = expr?.exprKind;
  if (kind?.case === "identExpr") return kind.value.name.replace(/^@/, "");
  if (kind?.case !== "selectExpr") return undefined;
  const operand = chainText(kind.value.operand);
  return operand && `${operand}.${kind.value.field}`;
}

function typeOf(expr: Expr | undefined, context: CheckContext, locals: ReadonlyMap<string, Type>): Type {
  if (!expr) return DYN;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "constExpr":
      return constantType(kind.value.constantKind.case);
    case "identExpr": {
      const name = kind.value.name;
      const type = locals.get(name) ?? context.variable(name);
      if (type) return type.kind === "refused" ? fail(type.reason) : type;
      return fail(context.otherPhase(name) ?? `unknown variable '${name}' (expected ${context.visible.join(", ")})`);
    }
    case "selectExpr": {
      const { operand, field, testOnly } = kind.value;
      const type = select(typeOf(operand, context, locals), field, () => chainText(operand));
      return testOnly ? BOOL : type;
    }
    case "callExpr":
      return callType(kind.value, context, locals);
    case "listExpr":
      return list(join(kind.value.elements.map((element) => typeOf(element, context, locals))));
    case "structExpr": {
      const entries = kind.value.entries;
      const keys = entries.map((entry) => (entry.keyKind.case === "mapKey" ? typeOf(entry.keyKind.value, context, locals) : STRING));
      const values = entries.map((entry) => typeOf(entry.value, context, locals));
      return kind.value.messageName ? DYN : map(join(keys), join(values));
    }
    case "comprehensionExpr": {
      const c = kind.value;
      const [first, second] = iteration(typeOf(c.iterRange, context, locals), c.iterVar2 !== "");
      const accumulator = typeOf(c.accuInit, context, locals);
      const inner = new Map(locals).set(c.accuVar, accumulator).set(c.iterVar, first);
      if (c.iterVar2) inner.set(c.iterVar2, second);
      typeOf(c.loopCondition, context, inner);
      typeOf(c.loopStep, context, inner);
      return typeOf(c.result, context, new Map(locals).set(c.accuVar, accumulator));
    }
    default:
      return DYN;
  }
}

function constantType(kind: string | undefined): Type {
  switch (kind) {
    case "boolValue":
      return BOOL;
    case "bytesValue":
      return scalar("bytes");
    case "doubleValue":
      return DOUBLE;
    case "int64Value":
      return INT;
    case "uint64Value":
      return scalar("uint");
    case "nullValue":
      return scalar("null_type");
    case "stringValue":
      return STRING;
    default:
      return DYN;
  }
}

function select(type: Type, field: string, parent: () => string | undefined): Type {
  switch (type.kind) {
    case "record": {
      const selected = type.fields[field];
      if (!selected) fail(`unknown field '${field}' of ${type.name}`);
      return selected.kind === "refused" ? fail(selected.reason) : selected;
    }
    case "map":
      if (!assignable(type.key, STRING)) fail(`a map with ${display(type.key)} keys has no field '${field}'`);
      return type.value;
    case "refused":
      return fail(type.reason);
    default:
      if (type.kind === "scalar" && type.name === "dyn") return DYN;
      return fail(`${parent() ?? display(type)} has no field '${field}'`);
  }
}

/** The types of a comprehension's variables over a range of type `range` (two-variable forms: index or key, then value). */
function iteration(range: Type, two: boolean): [Type, Type] {
  switch (range.kind) {
    case "list":
      return two ? [INT, range.element] : [range.element, DYN];
    case "map":
      return [range.key, range.value];
    case "record":
      return [STRING, DYN];
    case "scalar":
      if (range.name === "dyn") return [DYN, DYN];
      break;
  }
  return fail(`cannot iterate over ${display(range)}: comprehensions take a list or a map`);
}

function expectBool(type: Type, what: string): void {
  if (!assignable(BOOL, type)) fail(`${what} takes bool operands, not ${display(type)}`);
}

function callType(call: Call, context: CheckContext, locals: ReadonlyMap<string, Type>): Type {
  const name = call.function;
  const types = call.args.map((arg) => typeOf(arg, context, locals));
  switch (name) {
    case "_&&_":
    case "_||_":
      for (const type of types) expectBool(type, name === "_&&_" ? "'&&'" : "'||'");
      return BOOL;
    case "@not_strictly_false":
      return BOOL;
    case "_?_:_":
      expectBool(types[0], "the condition of '?:'");
      return join(types.slice(1));
    case "_==_":
    case "_!=_":
      if (!comparable(types[0], types[1])) fail(`'${name === "_==_" ? "==" : "!="}' compares ${display(types[0])} with ${display(types[1])}: never equal`);
      return BOOL;
    case "_[_]":
      return index(types[0], types[1]);
    case "_[?_]":
    case "_?._":
      return DYN;
  }
  const phaseProblem = context.otherPhase(name);
  if (phaseProblem) fail(phaseProblem);
  // `rand.double()`: a function of a namespace, when `rand` is no variable (the planner resolves it so too).
  const qualifier = chainText(call.target);
  const root = qualifier?.split(".")[0];
  if (qualifier && root && call.target?.exprKind.case === "identExpr" && !locals.has(root) && context.variable(root) === undefined) {
    const qualified = `${qualifier}.${name}`;
    if (context.funcs.find(qualified)) return callType({ ...call, function: qualified, target: undefined }, context, locals);
  }
  const group = context.funcs.find(name);
  if (!group) fail(`unknown function '${name}'`);
  const hasTarget = call.target !== undefined;
  const count = call.args.length;
  const overloads = [...group].filter((overload) => (overload.target !== undefined) === hasTarget && overload.arguments.length === count);
  if (overloads.length === 0) fail(`no overload of ${hasTarget ? "method" : "function"} '${name}' takes ${count} argument${count === 1 ? "" : "s"}`);
  const target = hasTarget ? typeOf(call.target, context, locals) : undefined;
  const matching = overloads.filter(
    (overload) =>
      (target === undefined || assignable(fromCelType(overload.target!), target)) &&
      overload.arguments.every((argument, i) => assignable(fromCelType(argument), types[i])),
  );
  if (matching.length === 0) {
    const taken = `(${types.map(display).join(", ")})`;
    if (OPERATORS[name]) fail(`'${OPERATORS[name]}' does not take ${taken}`);
    fail(target ? `no overload of method '${name}' of ${display(target)} takes ${taken}` : `no overload of function '${name}' takes ${taken}`);
  }
  return join(matching.map((overload) => fromCelType(overload.result)));
}

function index(container: Type, key: Type): Type {
  switch (container.kind) {
    case "list":
      if (!assignable(INT, key) && !assignable(scalar("uint"), key)) fail(`a list is indexed by int, not ${display(key)}`);
      return container.element;
    case "map":
      if (!assignable(container.key, key)) fail(`a ${display(container)} is indexed by ${display(container.key)}, not ${display(key)}`);
      return container.value;
    case "record":
      if (!assignable(STRING, key)) fail(`${container.name} is indexed by string, not ${display(key)}`);
      return DYN;
    case "refused":
      return fail(container.reason);
    default:
      if (container.kind === "scalar" && container.name === "dyn") return DYN;
      return fail(`${display(container)} cannot be indexed`);
  }
}
