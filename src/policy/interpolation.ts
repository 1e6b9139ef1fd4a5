/**
 * `${expression}` interpolation in action fields, as ngrok's: each expression is real CEL, checked at load
 * like an entry's (an unknown variable or a type error is an error located at the field), and evaluated per
 * request. What a template produces is bounded twice: cut at the field's own limit of characters, and every
 * interpolated character charged to the request's EvaluationBudget as CEL work. An expression that fails at
 * request time (an absent header indexed, the budget spent) is written as empty text and reported, never
 * thrown.
 */

import type { CelValue } from "@bufbuild/cel";
import type { Bindings } from "./cel-activation.ts";
import { celText } from "./cel-text.ts";
import { BudgetExceeded } from "./evaluation-budget.ts";
import type { Exchange, Phase } from "./exchange.ts";
import { splitTemplate } from "./template-syntax.ts";

/** What evaluating one interpolated expression gives: a value of any CEL type, or why there is none. */
export type ValueResult = CelValue | { error: string };

export interface ValueExpression {
  readonly source: string;
  evaluate(exchange: Exchange, bindings?: Bindings): ValueResult;
}

/** Compiles one expression of any result type for `phase` (an ActionContext's `expressions.value`). */
export type ValueCompiler = (source: string, phase: Phase) => { ok: true; expression: ValueExpression } | { ok: false; message: string };

/** True for the failure a ValueExpression returns (a plain `{ error }`, never a CEL value). */
export function isValueError(result: ValueResult): result is { error: string } {
  return (
    typeof result === "object" &&
    result !== null &&
    Object.getPrototypeOf(result) === Object.prototype &&
    typeof (result as { error?: unknown }).error === "string" &&
    Object.keys(result).length === 1
  );
}

/** Where one render reports a `${…}` that failed (the action's field and the isolate's log behind it). */
export type InterpolationFailed = (source: string, message: string) => void;

export interface CompiledTemplate {
  readonly text: string;
  /** False when the text has no `${…}`: it renders as itself, at no cost. */
  readonly dynamic: boolean;
  /** Characters of its expressions. */
  readonly expressionChars: number;
  /** The expression when the text is exactly one `${…}`, whose value keeps its type where a field allows it. */
  readonly alone?: ValueExpression;
  /** The text with each `${…}` replaced by its value as text, at most `max` characters. */
  render(exchange: Exchange, bindings: Bindings, max: number, failed: InterpolationFailed): string;
}

export type CompileTemplateResult = { ok: true; template: CompiledTemplate } | { ok: false; message: string };

/** Characters of an expression quoted in a load error. */
const QUOTED_SOURCE_CHARS = 64;

function quoted(source: string): string {
  const text = source.length > QUOTED_SOURCE_CHARS ? `${source.slice(0, QUOTED_SOURCE_CHARS)}…` : source;
  return `\${${text}}`;
}

/**
 * Charges `units` of what `${source}` produced to the request's CEL work; false (reported) once the request
 * is past its budget, when the caller writes nothing of it.
 */
export function chargeProduced(exchange: Exchange, units: number, source: string, failed: InterpolationFailed): boolean {
  try {
    exchange.budget.chargeCel(units);
    return true;
  } catch (error) {
    if (!(error instanceof BudgetExceeded)) throw error;
    failed(source, error.message);
    return false;
  }
}

/** One `${…}` evaluated and written as text within `room`, its characters charged to the request. */
function interpolate(expression: ValueExpression, exchange: Exchange, bindings: Bindings, room: number, failed: InterpolationFailed): string {
  const value = expression.evaluate(exchange, bindings);
  if (isValueError(value)) {
    failed(expression.source, value.error);
    return "";
  }
  const text = celText(value, room);
  return chargeProduced(exchange, text.length, expression.source, failed) ? text : "";
}

/** Parses `text` and compiles each of its `${…}` for `phase`; a message (naming the expression) otherwise. */
export function compileTemplate(text: string, phase: Phase, compile: ValueCompiler): CompileTemplateResult {
  const split = splitTemplate(text);
  if (!split.ok) return { ok: false, message: split.message };
  const parts: Array<string | ValueExpression> = [];
  let expressionChars = 0;
  for (const part of split.parts) {
    if ("literal" in part) {
      parts.push(part.literal);
      continue;
    }
    const compiled = compile(part.expression, phase);
    if (!compiled.ok) return { ok: false, message: `${quoted(part.expression)}: ${compiled.message}` };
    parts.push(compiled.expression);
    expressionChars += part.expression.length;
  }
  const dynamic = parts.some((part) => typeof part !== "string");
  const alone = parts.length === 1 && typeof parts[0] !== "string" ? parts[0] : undefined;
  return {
    ok: true,
    template: {
      text,
      dynamic,
      expressionChars,
      alone,
      render(exchange, bindings, max, failed) {
        if (!dynamic) return text.length > max ? text.slice(0, max) : text;
        let joined = "";
        for (const part of parts) {
          const room = max - joined.length;
          if (room <= 0) break;
          if (typeof part === "string") joined += part.length > room ? part.slice(0, room) : part;
          else joined += interpolate(part, exchange, bindings, room, failed);
        }
        return joined;
      },
    },
  };
}
