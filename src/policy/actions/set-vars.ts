/**
 * `set-vars` (as ngrok's): `vars` is a list of one-key maps, each setting one variable that later actions and
 * expressions of the same phase read as `vars.<name>`. Values keep their types (strings, integers as int,
 * other numbers as double, booleans, null, lists, maps); strings anywhere in a value may interpolate `${…}`,
 * and a string that is exactly one `${…}` takes the type of its value. Variables are set in order, so a later
 * one may read an earlier one. Bounded: variables per action and per request, name length, value size.
 */

import { celList, celMap, type CelValue } from "@bufbuild/cel";
import { z } from "zod";
import { celText } from "../cel-text.ts";
import type { Exchange } from "../exchange.ts";
import { chargeProduced, isValueError } from "../interpolation.ts";
import type { PathSegment } from "../issues.ts";
import { defineAction, type ActionContext } from "./action.ts";
import { compileFields, FieldRun, type InterpolatedField } from "./interpolated-fields.ts";

/** Entries of one action's `vars` list. */
export const MAX_SET_VARS_PER_ACTION = 16;
/** Distinct variables one request may hold per phase (a set-vars naming one more is not run for it). */
export const MAX_VARS_PER_REQUEST = 64;
/** Characters of a variable's name. */
export const MAX_VAR_NAME_CHARS = 64;
/** Characters of a variable's value, written as interpolation writes it (JSON for lists and maps). */
export const MAX_VAR_VALUE_CHARS = 16 * 1024;

const varName = z
  .string()
  .max(MAX_VAR_NAME_CHARS, `must be at most ${MAX_VAR_NAME_CHARS} characters`)
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a letter or _ followed by letters, digits or _ (read as vars.<name>)");

export const setVarsConfig = z.strictObject({
  vars: z
    .array(
      z
        .record(varName, z.unknown(), { error: "must be a map of one variable name to its value" })
        .refine((entry) => Object.keys(entry).length === 1, "must have exactly 1 key: the variable's name"),
      { error: "must be a list of one-key maps" },
    )
    .min(1, "must set at least 1 variable")
    .max(MAX_SET_VARS_PER_ACTION, `exceeds the limit of ${MAX_SET_VARS_PER_ACTION} variables per action`)
    .describe("Variables to set, in order: each a map of one name to a value of any type; strings may interpolate ${expression}."),
});

type Config = z.output<typeof setVarsConfig>;

/** A value as compiled: fixed, a string with `${…}`, or a list or map holding either. */
type Shape =
  | { readonly kind: "fixed"; readonly value: CelValue }
  | { readonly kind: "text"; readonly field: InterpolatedField }
  | { readonly kind: "list"; readonly items: readonly Shape[] }
  | { readonly kind: "map"; readonly entries: ReadonlyArray<readonly [string, Shape]> };

/** A document value as CEL holds it: integers as int, other numbers as double. */
function fixedValue(value: unknown): CelValue {
  if (typeof value === "number") return Number.isInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return celList(value.map(fixedValue));
  if (value !== null && typeof value === "object") return celMap(new Map(Object.entries(value).map(([key, item]) => [key, fixedValue(item)])));
  return value as CelValue;
}

/** Every string of a value with `${…}` in it, with its path inside `config`. */
function templatesOf(value: unknown, path: PathSegment[], out: Array<readonly [PathSegment[], string]>): void {
  if (typeof value === "string") {
    if (value.includes("${")) out.push([path, value]);
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) templatesOf(item, [...path, index], out);
  } else if (value !== null && typeof value === "object") for (const [key, item] of Object.entries(value)) templatesOf(item, [...path, key], out);
}

function shapeOf(value: unknown, path: PathSegment[], fields: ReadonlyMap<string, InterpolatedField>): Shape {
  const field = fields.get(JSON.stringify(path));
  if (field) return { kind: "text", field };
  if (Array.isArray(value)) {
    const items = value.map((item, index) => shapeOf(item, [...path, index], fields));
    return items.every((item) => item.kind === "fixed") ? { kind: "fixed", value: fixedValue(value) } : { kind: "list", items };
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).map(([key, item]) => [key, shapeOf(item, [...path, key], fields)] as const);
    return entries.every(([, item]) => item.kind === "fixed") ? { kind: "fixed", value: fixedValue(value) } : { kind: "map", entries };
  }
  return { kind: "fixed", value: fixedValue(value) };
}

interface CompiledVar {
  readonly name: string;
  readonly shape: Shape;
  /** ["vars", index, name] */
  readonly path: readonly PathSegment[];
}

const compileVars = (config: Config, context: ActionContext) => {
  const texts: Array<readonly [PathSegment[], string]> = [];
  config.vars.forEach((entry, index) => {
    for (const [name, value] of Object.entries(entry)) templatesOf(value, ["vars", index, name], texts);
  });
  const compiled = compileFields(texts, context);
  if (!compiled.ok) return compiled;
  const fields = new Map(compiled.fields.map((field) => [JSON.stringify(field.path), field]));
  const vars: CompiledVar[] = [];
  for (const [index, entry] of config.vars.entries()) {
    const [name, value] = Object.entries(entry)[0];
    const path = ["vars", index, name];
    const shape = shapeOf(value, path, fields);
    if (shape.kind === "fixed" && celText(shape.value, MAX_VAR_VALUE_CHARS + 1).length > MAX_VAR_VALUE_CHARS) {
      return { ok: false as const, path, message: `exceeds the limit of ${MAX_VAR_VALUE_CHARS} characters per value` };
    }
    vars.push({ name, shape, path });
  }
  return { ok: true as const, vars };
};

/** The value of `shape` for this request; undefined when a `${…}` alone failed (reported) or the budget is spent. */
function produce(shape: Shape, run: FieldRun, exchange: Exchange): CelValue | undefined {
  switch (shape.kind) {
    case "fixed":
      return shape.value;
    case "list": {
      const items: CelValue[] = [];
      for (const item of shape.items) {
        const value = produce(item, run, exchange);
        if (value === undefined) return undefined;
        items.push(value);
      }
      return celList(items);
    }
    case "map": {
      const entries = new Map<string, CelValue>();
      for (const [key, item] of shape.entries) {
        const value = produce(item, run, exchange);
        if (value === undefined) return undefined;
        entries.set(key, value);
      }
      return celMap(entries);
    }
    case "text": {
      const { field } = shape;
      const alone = field.template.alone;
      if (!alone) return run.render(field, MAX_VAR_VALUE_CHARS);
      const failed = run.failed(field);
      const bindings = run.variables(alone.source, failed);
      if (!bindings) return undefined;
      const value = alone.evaluate(exchange, bindings);
      if (isValueError(value)) {
        failed(alone.source, value.error);
        return undefined;
      }
      return value;
    }
  }
}

export const setVarsAction = defineAction({
  type: "set-vars",
  config: setVarsConfig,
  configOptional: false,
  compile(config, context) {
    const compiled = compileVars(config, context);
    if (!compiled.ok) return { path: compiled.path, message: compiled.message };
    // One object per variable, made once: failures are rate-limited per object.
    const places = compiled.vars.map((variable) => ({ where: `${context.position}.config.vars[${variable.path[1]}].${variable.name}` }));
    return {
      type: "set-vars",
      run(exchange, services) {
        const run = new FieldRun(exchange, services);
        const vars = (exchange.policyVars ??= new Map());
        for (const [index, variable] of compiled.vars.entries()) {
          const report = run.failed(places[index]);
          if (!vars.has(variable.name) && vars.size >= MAX_VARS_PER_REQUEST) {
            report(`vars.${variable.name}`, `exceeds the limit of ${MAX_VARS_PER_REQUEST} variables per request; not set`);
            continue;
          }
          const value = produce(variable.shape, run, exchange);
          if (value === undefined) continue;
          if (variable.shape.kind !== "fixed") {
            // What an expression produced is measured as it would be written, and charged like interpolated text.
            const size = celText(value, MAX_VAR_VALUE_CHARS + 1).length;
            if (size > MAX_VAR_VALUE_CHARS) {
              report(`vars.${variable.name}`, `exceeds the limit of ${MAX_VAR_VALUE_CHARS} characters per value; not set`);
              continue;
            }
            if (!chargeProduced(exchange, size, `vars.${variable.name}`, report)) continue;
          }
          vars.set(variable.name, value);
          // the next variable may read this one
          run.changed();
        }
        return undefined;
      },
    };
  },
});
