/**
 * Copying a CEL syntax tree with its children replaced: the shared walk of the load-time rewrites (the hidden
 * variables of variables/rewrite.ts, the iteration meter of cel-meter.ts), so each states only what it changes.
 */

import type { parse } from "@bufbuild/cel";

export type Expr = NonNullable<ReturnType<typeof parse>["expr"]>;

/** Where a child sits: a comprehension's parts are told apart (their scopes differ), everything else is "operand". */
export type ChildSlot = "operand" | "iterRange" | "accuInit" | "loop" | "result";

/** `expr` with each direct child replaced by `map(child, slot)`, on a copy; leaves (identifiers, constants) as they are. */
export function mapChildren(expr: Expr, map: (child: Expr | undefined, slot: ChildSlot) => Expr | undefined): Expr {
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr":
      return { ...expr, exprKind: { case: "selectExpr", value: { ...kind.value, operand: map(kind.value.operand, "operand") } } };
    case "callExpr":
      return {
        ...expr,
        exprKind: {
          case: "callExpr",
          value: { ...kind.value, target: map(kind.value.target, "operand"), args: kind.value.args.map((arg) => map(arg, "operand")!) },
        },
      };
    case "listExpr":
      return { ...expr, exprKind: { case: "listExpr", value: { ...kind.value, elements: kind.value.elements.map((element) => map(element, "operand")!) } } };
    case "structExpr":
      return {
        ...expr,
        exprKind: {
          case: "structExpr",
          value: {
            ...kind.value,
            entries: kind.value.entries.map((entry) => ({
              ...entry,
              keyKind: entry.keyKind.case === "mapKey" ? { case: "mapKey", value: map(entry.keyKind.value, "operand")! } : entry.keyKind,
              value: map(entry.value, "operand"),
            })),
          },
        },
      } as Expr;
    case "comprehensionExpr": {
      const c = kind.value;
      return {
        ...expr,
        exprKind: {
          case: "comprehensionExpr",
          value: {
            ...c,
            iterRange: map(c.iterRange, "iterRange"),
            accuInit: map(c.accuInit, "accuInit"),
            loopCondition: map(c.loopCondition, "loop"),
            loopStep: map(c.loopStep, "loop"),
            result: map(c.result, "result"),
          },
        },
      };
    }
    default:
      return expr;
  }
}
