/**
 * `settle_cost` of a `rate-limit` action: a CEL expression over the response (`res.status_code`, `res.headers`,
 * and `res.body`, its JSON body, when the expression reads it) whose value replaces the cost the request
 * reserved. Compiled once; per admitted request it becomes a `ResponseSettle` the pipeline runs when the target's
 * response arrives (src/gateway/response-settle.ts), and the counter sends its value to the bucket.
 */

import { activation } from "../cel-activation.ts";
import { BudgetExceeded } from "../evaluation-budget.ts";
import type { CompiledValueExpression } from "../compiled-expression.ts";
import type { CountResult, Exchange, ResponseSettle } from "../exchange.ts";
import { headerMap } from "../variables/header-map.ts";
import type { ActionContext } from "./action.ts";
import { costOf } from "./rate-limit-plan.ts";

type Located = { readonly path: ReadonlyArray<string | number>; readonly message: string };

/** `settle_cost` compiled (undefined: none), or where it fails: a bad expression, or a rate-limit on the response. */
export function compileSettleCost(
  source: string | undefined,
  { phase, expressions }: Pick<ActionContext, "phase" | "expressions">,
): CompiledValueExpression | Located | undefined {
  if (source === undefined) return undefined;
  if (phase !== "inbound") return { path: ["settle_cost"], message: "is for a rate-limit on the request (inbound): the response settles what it reserved" };
  const compiled = expressions.value(source, "outbound", { responseBody: true });
  return compiled.ok ? compiled.expression : { path: ["settle_cost"], message: compiled.message };
}

/** The reservation id of one request's count when the action settles (a random UUID), else undefined. */
export function reservationId(settle: CompiledValueExpression | undefined): string | undefined {
  return settle ? crypto.randomUUID() : undefined;
}

/**
 * After a count that reserved its cost: the response's settle, added to the exchange for the pipeline. It
 * evaluates `expression` against the response and hands a valid cost to the counter; an error, a value that is
 * not an integer from 0 to 1,000,000, or a `res.body` absent where the expression needs it send nothing, and
 * the estimate stays.
 */
export function awaitSettle(expression: CompiledValueExpression, exchange: Exchange, result: CountResult): void {
  if (!result.ok || !result.decision.allowed || !result.settle) return;
  const send = result.settle;
  const settle: ResponseSettle = {
    owner: expression,
    source: expression.source,
    readsBody: expression.readsResponseBody === true,
    async settle(response, body) {
      const seen: Exchange = { ...exchange, response: { status: response.status, headers: response.headers } };
      let headers: Map<string, string[]>;
      try {
        // Charged to the request's budget like any header map: a 10 MB header spends it.
        headers = headerMap(response.headers, exchange.budget);
      } catch (error) {
        if (error instanceof BudgetExceeded) return `settle_cost: ${error.message}`;
        throw error;
      }
      const res = new Map<string, unknown>([
        ["status_code", BigInt(response.status)],
        ["headers", headers],
      ]);
      if (body !== undefined) res.set("body", body);
      // Every variable as the outbound phase reads it, with `res` carrying the body.
      const bindings = Object.create(activation(seen), { res: { value: res } });
      const cost = costOf({ expression: { ...expression, evaluate: (on) => expression.evaluate(on, bindings) } }, seen);
      if (typeof cost !== "number") return `settle_${cost.error}`;
      await send(cost);
      return undefined;
    },
  };
  (exchange.settles ??= []).push(settle);
}
