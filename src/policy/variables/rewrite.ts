/**
 * Field chains that stand for hidden variables: `req.url` is a string (as in ngrok) and `req.url.path` one
 * of its parts, so `req.url.<field>` is rewritten at load to `@req.url.<field>`; likewise the parsed
 * User-Agent, the client address's geolocation, and the variables read from `request.cf`. A hidden
 * variable is read only when an expression reads it, so what costs (parsing, reading request.cf) is paid
 * only by requests whose policy asks for it. Names beginning with `@` cannot be written in an expression.
 */

import { type Expr, mapChildren } from "../cel-tree.ts";

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
      break;
    }
    case "comprehensionExpr": {
      const c = kind.value;
      const inner = new Set([...locals, c.iterVar, c.iterVar2, c.accuVar].filter(Boolean));
      const result = new Set([...locals, c.accuVar]);
      return mapChildren(expr, (child, slot) => rewriteHidden(child, slot === "loop" ? inner : slot === "result" ? result : locals));
    }
  }
  return mapChildren(expr, (child) => rewriteHidden(child, locals));
}
