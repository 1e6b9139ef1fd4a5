/**
 * What a compiled CEL expression offers, and the compiler an action is handed in its ActionContext. Apart from
 * cel.ts because the checker there reads the action registry (the type of `actions`): actions hold and compile
 * expressions through these types alone, so no action module imports cel.ts and the two never form a cycle.
 */

import type { CelValue } from "@bufbuild/cel";
import type { Bindings } from "./cel-activation.ts";
import type { Type } from "./cel-types.ts";
import type { Exchange, Phase } from "./exchange.ts";

export interface CompiledExpression {
  readonly source: string;
  /** Distinct matches() patterns, compiled and kept with the expression. */
  readonly patterns: number;
  /**
   * True/false; an evaluation error (a missing key, a type mismatch) is returned as a message. `bindings`:
   * the variables of `exchange` as `activation` built them for this phase (built here when absent).
   */
  evaluate(exchange: Exchange, bindings?: Bindings): boolean | { error: string };
}

export type CompileExpressionResult = { ok: true; expression: CompiledExpression } | { ok: false; message: string };

/** An expression of any result type (a `${…}` interpolation, a `set-vars` value). */
export interface CompiledValueExpression {
  readonly source: string;
  /** Distinct matches() patterns, compiled and kept with the expression. */
  readonly patterns: number;
  /** The type the load-time checker gives the result (`dyn` when only the request can tell). */
  readonly type: Type;
  /** The value; an evaluation error (a missing key, the budget spent) is returned as a message. */
  evaluate(exchange: Exchange, bindings?: Bindings): CelValue | { error: string };
  /** Compiled with `responseBody`: whether it reads `res.body`, so the body must be read before it runs. */
  readonly readsResponseBody?: boolean;
}

export type CompileValueExpressionResult = { ok: true; expression: CompiledValueExpression } | { ok: false; message: string };

/**
 * Compiles the expressions of one policy, checked against the action registry the policy compiles with (the
 * type of `actions`). Never throws: a bad expression comes back as a message.
 */
export interface ExpressionCompiler {
  /** A condition (an entry's expression, a tier's `when`): it must be a bool. */
  readonly condition: (source: string, phase: Phase) => CompileExpressionResult;
  /** An expression of any result type; `responseBody`: an outbound one that may also read `res.body` (a settle_cost). */
  readonly value: (source: string, phase: Phase, options?: { readonly responseBody?: boolean }) => CompileValueExpressionResult;
}
