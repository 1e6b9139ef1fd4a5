/**
 * `log` (as ngrok's): writes one structured JSON line per execution with the configured `metadata`. String
 * values may interpolate CEL, `${actions.svc.rate_limit.limited}`, checked at load like every `${…}`; a value
 * that is one `${…}` alone keeps its type when it is a bool or a number (a boolean stays a boolean). What one request may log is
 * bounded by its EvaluationBudget: values are cut while they are put together, never joined in full first,
 * and a record past the budget is dropped (counted in the next record the request writes).
 */

import type { CelValue } from "@bufbuild/cel";
import { z } from "zod";
import type { Exchange } from "../exchange.ts";
import { celText } from "../cel-text.ts";
import { chargeProduced, isValueError } from "../interpolation.ts";
import { defineAction, type ActionContext } from "./action.ts";
import { compileFields, FieldRun, type InterpolatedField } from "./interpolated-fields.ts";

/** Keys of one `metadata` map. */
export const MAX_LOG_METADATA_KEYS = 16;
/** Characters of a metadata key. */
export const MAX_LOG_KEY_CHARS = 64;
/** Characters of a metadata value, as written and after interpolation (longer values are cut). */
export const MAX_LOG_VALUE_CHARS = 1024;

/** Characters the sink adds to every record: the event name and the ingress (cut at 256 characters). */
const LOG_RECORD_OVERHEAD = 320;

type Scalar = string | number | boolean;

/** One metadata value, compiled: a literal, one `${…}` (keeping its type), or a template; at most `max` characters of it. */
type CompiledValue = (run: FieldRun, exchange: Exchange, max: number) => Scalar;

function clip(value: string, max: number): string {
  return value.length > max ? value.slice(0, max) : value;
}

/** A value of one `${…}` alone as the record holds it: bools and numbers as themselves, the rest as text. */
function typed(value: CelValue, max: number): Scalar {
  if (typeof value === "boolean") return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "bigint" && value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  return celText(value, max);
}

function compileValue(value: Scalar, field: InterpolatedField | undefined): CompiledValue {
  if (typeof value !== "string" || !field?.template.dynamic) return typeof value === "string" ? (_run, _exchange, max) => clip(value, max) : () => value;
  const alone = field.template.alone;
  if (alone) {
    return (run, exchange, max) => {
      const failed = run.failed(field);
      const bindings = run.variables(alone.source, failed);
      if (!bindings) return "";
      const result = alone.evaluate(exchange, bindings);
      if (isValueError(result)) {
        failed(alone.source, result.error);
        return "";
      }
      const scalar = typed(result, max);
      // as every interpolated character is, charged to the request (a number or bool costs its digits)
      return chargeProduced(exchange, String(scalar).length, alone.source, failed) ? scalar : "";
    };
  }
  return (run, _exchange, max) => run.render(field, max);
}

/**
 * The record's metadata within the request's log budget: each value cut to what is left before it is put
 * together, keys that no longer fit left out (`truncated`); undefined when not even one fits.
 */
function metadataWithin(
  values: ReadonlyArray<readonly [string, CompiledValue]>,
  run: FieldRun,
  exchange: Exchange,
  overhead: number,
): { metadata: Record<string, Scalar>; truncated: boolean } | undefined {
  // the record's other fields (the metadata's braces among them)
  let left = exchange.budget.logBytesLeft() - overhead;
  const metadata: Record<string, Scalar> = {};
  let written = 0;
  for (const [key, read] of values) {
    // quotes, colon and comma around the key, and the quotes of a string value
    const room = left - (key.length + 6);
    if (room <= 0) return written > 0 ? { metadata, truncated: true } : undefined;
    const value = read(run, exchange, Math.min(MAX_LOG_VALUE_CHARS, room));
    metadata[key] = value;
    written++;
    left -= key.length + 6 + (typeof value === "string" ? value.length : String(value).length);
  }
  return { metadata, truncated: false };
}

const metadataValue = z.union([z.string().max(MAX_LOG_VALUE_CHARS, `must be at most ${MAX_LOG_VALUE_CHARS} characters`), z.number(), z.boolean()], {
  error: "must be a string, number or boolean",
});

export const logConfig = z.strictObject({
  metadata: z
    .record(
      z
        .string()
        .max(MAX_LOG_KEY_CHARS, `must be at most ${MAX_LOG_KEY_CHARS} characters`)
        .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, "must be a letter or _ followed by letters, digits, _, . or -"),
      metadataValue,
      { error: "must be a map of names to values" },
    )
    .refine((metadata) => Object.keys(metadata).length >= 1, "must have at least 1 key")
    .refine((metadata) => Object.keys(metadata).length <= MAX_LOG_METADATA_KEYS, `exceeds the limit of ${MAX_LOG_METADATA_KEYS} keys`)
    .describe("What to log: names to strings (which may interpolate ${variables}), numbers or booleans."),
});

const logFields = (config: z.output<typeof logConfig>, context: ActionContext) =>
  compileFields(
    Object.entries(config.metadata).flatMap(([key, value]) => (typeof value === "string" ? [[["metadata", key], value] as const] : [])),
    context,
  );

export const logAction = defineAction({
  type: "log",
  config: logConfig,
  configOptional: false,
  compile(config, context) {
    const compiled = logFields(config, context);
    if (!compiled.ok) return { path: compiled.path, message: compiled.message };
    const fieldOf = new Map(compiled.fields.map((field) => [String(field.path[1]), field]));
    const values = Object.entries(config.metadata).map(([key, value]) => [key, compileValue(value, fieldOf.get(key))] as const);
    return {
      type: "log",
      run(exchange, services) {
        const { decisions } = services;
        const { budget } = exchange;
        const dropped = budget.droppedLogRecords;
        const head = { route: exchange.scope, action: context.position, phase: context.phase, ...(dropped > 0 ? { dropped_before: dropped } : {}) };
        const overhead = JSON.stringify({ ...head, metadata: {}, truncated: true }).length + LOG_RECORD_OVERHEAD;
        const within = metadataWithin(values, new FieldRun(exchange, services), exchange, overhead);
        const record = within && { ...head, metadata: within.metadata, ...(within.truncated ? { truncated: true } : {}) };
        // The whole record counts, as written: its fields, the metadata as JSON, what the sink adds.
        if (!record || !budget.takeLogBytes(JSON.stringify(record).length + LOG_RECORD_OVERHEAD)) {
          budget.droppedLogRecords++;
          return undefined;
        }
        budget.droppedLogRecords = 0;
        if (decisions) decisions.log(record);
        else console.log(JSON.stringify({ event: "traffic_policy.log", ...record }));
        return undefined;
      },
    };
  },
});
