/**
 * `res.body`: the response's JSON body as CEL values, readable only by a rate-limit's `settle_cost` (the one
 * expression that runs once the body has arrived). Bounded: at most `MAX_SETTLE_BODY_BYTES` are read, at most
 * `MAX_SETTLE_BODY_DEPTH` levels converted; past either, or on a body that is not JSON, `res.body` is absent.
 */

import type { parse } from "@bufbuild/cel";
import { DYN, INT, record, STRING_LIST_MAP } from "../cel-types.ts";

/** Bytes of a JSON response body a settle reads; a longer body settles nothing from its body. */
export const MAX_SETTLE_BODY_BYTES = 64 * 1024;
/** Levels of nesting a settle converts; a deeper body settles nothing from its body. */
export const MAX_SETTLE_BODY_DEPTH = 32;

/** `res` as `settle_cost` sees it: `body` besides the status and headers. */
export const RES_WITH_BODY = record("res", { status_code: INT, headers: STRING_LIST_MAP, body: DYN });

type Expr = NonNullable<ReturnType<typeof parse>["expr"]>;

/** Whether an expression selects `res.body` (has(res.body) included), so the body must be read before it runs. */
export function selectsResponseBody(expr: Expr | undefined): boolean {
  const pending: unknown[] = [expr];
  // The tree is bounded (MAX_EXPRESSION_NODES) before this runs; a walk over its plain objects finds every select.
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== "object") continue;
    const kind = (node as Partial<Expr>).exprKind;
    if (kind?.case === "selectExpr" && kind.value.field === "body") {
      const operand = kind.value.operand?.exprKind;
      if (operand?.case === "identExpr" && operand.value.name === "res") return true;
    }
    for (const value of Object.values(node)) if (typeof value === "object") pending.push(value);
  }
  return false;
}

/** JSON → CEL values: objects as maps, whole numbers as int (as usage counts are), others as double. */
function toCel(value: unknown, depth: number): unknown {
  if (typeof value === "number") return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (value === null || typeof value !== "object") return value;
  if (depth >= MAX_SETTLE_BODY_DEPTH) throw new RangeError("too deep");
  if (Array.isArray(value)) return value.map((item) => toCel(item, depth + 1));
  return new Map(Object.entries(value).map(([key, item]) => [key, toCel(item, depth + 1)]));
}

/** The body's CEL value, or undefined when it is not JSON or nests too deep (the bytes are already bounded). */
export function jsonBodyValue(text: string): unknown {
  try {
    return toCel(JSON.parse(text), 0);
  } catch {
    return undefined;
  }
}

/** Whether a response's content type is JSON (`application/json`, `application/*+json`). */
export function isJsonContentType(contentType: string | null): boolean {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}
