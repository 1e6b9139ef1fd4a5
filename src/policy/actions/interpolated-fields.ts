/**
 * The `${…}` fields of one action: compiled once when the policy loads (the check compiles them and the
 * compiler takes the result, so no expression is parsed twice), and rendered per request with the
 * variables built once for the action and failures reported to the isolate's log at a bounded rate.
 */

import { activation, type Bindings } from "../cel-activation.ts";
import { BudgetExceeded } from "../evaluation-budget.ts";
import type { ActionServices, Exchange } from "../exchange.ts";
import type { InterpolationLog } from "../exchange.ts";
import { ExpressionErrorLog } from "../expression-error-log.ts";
import { compileTemplate, type CompiledTemplate, type InterpolationFailed } from "../interpolation.ts";
import { formatPath, type PathSegment } from "../issues.ts";
import type { ActionContext } from "./action.ts";

/** One interpolated field: where it sits in the action's config, and its compiled text. */
export interface InterpolatedField {
  /** Path inside `config`, e.g. ["headers", "x-client-ip"]. */
  readonly path: readonly PathSegment[];
  /** The field's full path, for log lines: `inbound[0].actions[1].config.headers.x-client-ip`. */
  readonly where: string;
  readonly template: CompiledTemplate;
}

export type CompiledFields = { ok: true; fields: InterpolatedField[] } | { ok: false; path: readonly PathSegment[]; message: string };

/** Where failures go when the caller's services name no log (tools, tests): bounded like the gateway's. */
const fallbackLog: InterpolationLog = new ExpressionErrorLog();

/** Compiles the texts at `paths` of an action's config; the first that does not compile is a located message. */
export function compileFields(texts: ReadonlyArray<readonly [path: readonly PathSegment[], text: string]>, context: ActionContext): CompiledFields {
  const fields: InterpolatedField[] = [];
  for (const [path, text] of texts) {
    const compiled = compileTemplate(text, context.phase, context.expressions.value);
    if (!compiled.ok) return { ok: false, path, message: compiled.message };
    fields.push({ path, where: `${context.position}.${formatPath(["config", ...path])}`, template: compiled.template });
  }
  return { ok: true, fields };
}

/** What a run of an action needs to render its fields: the variables, built on first use, and where failures go. */
export class FieldRun {
  private bindings: Bindings | undefined;

  constructor(
    private readonly exchange: Exchange,
    private readonly services: ActionServices,
  ) {}

  /** `field`'s text for this request, at most `max` characters. */
  render(field: InterpolatedField, max: number): string {
    if (!field.template.dynamic) return field.template.render(this.exchange, {}, max, () => undefined);
    const failed = this.failed(field);
    const bindings = this.variables(field.template.text, failed);
    return bindings ? field.template.render(this.exchange, bindings, max, failed) : "";
  }

  /** Where a `${…}` of `field` (or any compiled part of an action, kept by identity) that fails is reported. */
  failed(field: { readonly where: string }): InterpolationFailed {
    const log = this.services.interpolationErrors ?? fallbackLog;
    return (source, message) => log.interpolationError(field, field.where, source, message);
  }

  /**
   * The variables as expressions read them, built once per run (again after `changed`); undefined, reported
   * against `source`, when building them goes past the request's budget (a request's headers are charged).
   */
  variables(source: string, failed: InterpolationFailed): Bindings | undefined {
    if (this.bindings) return this.bindings;
    try {
      this.bindings = activation(this.exchange);
    } catch (error) {
      if (!(error instanceof BudgetExceeded)) throw error;
      failed(source, error.message);
    }
    return this.bindings;
  }

  /** Something (a set-vars) changed what expressions read: the next render builds the variables again. */
  changed(): void {
    this.bindings = undefined;
  }
}
