/**
 * What an action declares of its result variables (`actions.svc.<name>.*`, and `actions.ngrok.…`): their CEL
 * shape and their values before it runs. The CEL checker and the exchange's `vars` derive from these
 * declarations through the registry (registry.ts), so an action's variables are written in its own file only.
 */

import { record, STRING, type Type } from "../cel-types.ts";

/**
 * The result variables of every registered action, by name: the type of `exchange.vars`. Each action file
 * adds its own member (`declare module "./results.ts" { interface ActionVars { rate_limit: RateLimitVars } }`).
 */
// biome-ignore lint/suspicious/noEmptyInterface: each action file adds its member by declaration merging
export interface ActionVars {}

/**
 * The fields of a result record: each a CEL type, a record of fields of its own, or a type named after where
 * it is (`(at) => list(record(`${at}[]`, …))`). At request time a record is a plain object (read as a CEL
 * map) and every other value is already what CEL reads (string, boolean, list, map).
 */
export interface ResultShape {
  readonly [field: string]: Type | ResultShape | ((at: string) => Type);
}

export interface ActionResults<Vars = unknown> {
  /** The name under `actions.svc` and `actions.ngrok`, e.g. `rate_limit`. */
  readonly name: string;
  readonly shape: ResultShape;
  /** The values before the action ran in a request: a fresh object for each request, in the shape's field order. */
  initial(): Vars;
}

/** `Vars` is the type of the values; `shape` describes them to the CEL checker, field for field. */
export function declareResults<Vars>(name: string, shape: ResultShape, initial: () => Vars): ActionResults<Vars> {
  return { name, shape, initial };
}

/** Why an action could not do its work (`.error.code`, `.error.message`), '' for both when it could. */
export interface ResultError {
  code: string;
  message: string;
}

export const ERROR_SHAPE: ResultShape = { code: STRING, message: STRING };

export function noError(): ResultError {
  return { code: "", message: "" };
}

/** The CEL type of a shape declared at `at` (`actions.svc.rate_limit`): records named by their path, as messages show them. */
export function shapeType(at: string, shape: ResultShape): Type {
  const fields: Record<string, Type> = {};
  for (const [field, value] of Object.entries(shape)) {
    const where = `${at}.${field}`;
    if (typeof value === "function") fields[field] = value(where);
    else fields[field] = typeof value.kind === "string" ? (value as Type) : shapeType(where, value as ResultShape);
  }
  return record(at, fields);
}
