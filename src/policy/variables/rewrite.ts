/**
 * Field chains that stand for hidden variables: `req.url` is a string (as in ngrok) and `req.url.path` one
 * of its parts, so `req.url.<field>` is rewritten at load to `@req.url.<field>`; likewise the parsed
 * User-Agent, the client address's geolocation, and the variables read from `request.cf`. A hidden
 * variable is read only when an expression reads it, so what costs (parsing, reading request.cf) is paid
 * only by requests whose policy asks for it. Names beginning with `@` cannot be written in an expression.
 */

import type { parse } from "@bufbuild/cel";

type Expr = NonNullable<ReturnType<typeof parse>["expr"]>;

interface Rule {
  readonly chain: readonly string[];
  readonly hidden: string;
  /** Rewritten also when the chain ends there (`conn.geo`); else only with a field after it (`req.url.path`). */
  readonly whole: boolean;
}

const RULES: readonly Rule[] = [
  { chain: ["req", "url", "query_params"], hidden: "@req.url.query_params", whole: true },
  { chain: ["req", "cookies"], hidden: "@req.cookies", whole: true },
  { chain: ["conn", "geo"], hidden: "@conn.geo", whole: true },
  { chain: ["conn", "tls"], hidden: "@conn.tls", whole: true },
  { chain: ["req", "url"], hidden: "@req.url", whole: false },
  { chain: ["req", "user_agent"], hidden: "@req.user_agent", whole: false },
  { chain: ["conn", "client_ip"], hidden: "@conn.client_ip", whole: false },
];

function chainOf(expr: Expr | undefined): string[] | undefined {
  const kind = expr?.exprKind;
  if (kind?.case === "identExpr") return [kind.value.name];
  if (kind?.case !== "selectExpr") return undefined;
  const chain = chainOf(kind.value.operand);
  return chain && [...chain, kind.value.field];
}

const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((part, i) => part === b[i]);

function ident(id: bigint, name: string): Expr {
  return { $typeName: "cel.expr.Expr", id, exprKind: { case: "identExpr", value: { $typeName: "cel.expr.Expr.Ident", name } } } as Expr;
}

/**
 * The expression with every chain of a rule replaced by its hidden variable, on a copy. `locals`: names
 * comprehensions bind, which shadow variables. The tree is bounded (MAX_EXPRESSION_NODES) before this runs.
 */
export function rewriteHidden(expr: Expr | undefined, locals: ReadonlySet<string> = new Set()): Expr | undefined {
  if (!expr) return expr;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr": {
      const chain = chainOf(expr);
      if (chain && !locals.has(chain[0])) {
        for (const rule of RULES) {
          if (rule.whole && same(chain, rule.chain)) {
            // has(conn.geo): the variable is always there.
            if (kind.value.testOnly)
              return {
                ...expr,
                exprKind: { case: "constExpr", value: { $typeName: "cel.expr.Constant", constantKind: { case: "boolValue", value: true } } },
              } as Expr;
            return ident(expr.id, rule.hidden);
          }
          if (same(chain.slice(0, -1), rule.chain)) {
            return { ...expr, exprKind: { case: "selectExpr", value: { ...kind.value, operand: ident(kind.value.operand?.id ?? 0n, rule.hidden) } } };
          }
        }
      }
      return { ...expr, exprKind: { case: "selectExpr", value: { ...kind.value, operand: rewriteHidden(kind.value.operand, locals) } } };
    }
    case "callExpr":
      return {
        ...expr,
        exprKind: {
          case: "callExpr",
          value: { ...kind.value, target: rewriteHidden(kind.value.target, locals), args: kind.value.args.map((arg) => rewriteHidden(arg, locals)!) },
        },
      };
    case "listExpr":
      return {
        ...expr,
        exprKind: { case: "listExpr", value: { ...kind.value, elements: kind.value.elements.map((element) => rewriteHidden(element, locals)!) } },
      };
    case "structExpr":
      return {
        ...expr,
        exprKind: {
          case: "structExpr",
          value: {
            ...kind.value,
            entries: kind.value.entries.map((entry) => ({
              ...entry,
              keyKind: entry.keyKind.case === "mapKey" ? { case: "mapKey", value: rewriteHidden(entry.keyKind.value, locals)! } : entry.keyKind,
              value: rewriteHidden(entry.value, locals),
            })),
          },
        },
      } as Expr;
    case "comprehensionExpr": {
      const c = kind.value;
      const inner = new Set([...locals, c.iterVar, c.iterVar2, c.accuVar].filter(Boolean));
      const result = new Set([...locals, c.accuVar]);
      return {
        ...expr,
        exprKind: {
          case: "comprehensionExpr",
          value: {
            ...c,
            iterRange: rewriteHidden(c.iterRange, locals),
            accuInit: rewriteHidden(c.accuInit, locals),
            loopCondition: rewriteHidden(c.loopCondition, inner),
            loopStep: rewriteHidden(c.loopStep, inner),
            result: rewriteHidden(c.result, result),
          },
        },
      };
    }
    default:
      return expr;
  }
}
