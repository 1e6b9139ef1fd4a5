/**
 * The types the load-time checker (cel-check.ts) gives expressions: CEL's, plus records for the policy's
 * variables (`req`, `conn`, …: known fields, each with its type) and refusals for variables ngrok has that
 * Workers cannot provide.
 */

import type { CelType } from "@bufbuild/cel";

export type Scalar = "int" | "uint" | "double" | "string" | "bool" | "bytes" | "null_type" | "dyn" | "timestamp" | "duration" | "type";

export type Type =
  | { readonly kind: "scalar"; readonly name: Scalar }
  | { readonly kind: "list"; readonly element: Type }
  | { readonly kind: "map"; readonly key: Type; readonly value: Type }
  /** A variable with known fields: selecting another is a load error. */
  | { readonly kind: "record"; readonly name: string; readonly fields: Readonly<Record<string, Type>> }
  /** A variable that cannot exist here: reading it is a load error saying why. */
  | { readonly kind: "refused"; readonly reason: string };

const scalars = new Map<Scalar, Type>();
export function scalar(name: Scalar): Type {
  let type = scalars.get(name);
  if (!type) scalars.set(name, (type = { kind: "scalar", name }));
  return type;
}

export const INT = scalar("int");
export const DOUBLE = scalar("double");
export const STRING = scalar("string");
export const BOOL = scalar("bool");
export const DYN = scalar("dyn");
export const STRING_LIST: Type = { kind: "list", element: STRING };
/** Header, query and cookie maps: lower-case names to every value. */
export const STRING_LIST_MAP: Type = { kind: "map", key: STRING, value: STRING_LIST };

export function list(element: Type): Type {
  return { kind: "list", element };
}

export function map(key: Type, value: Type): Type {
  return { kind: "map", key, value };
}

export function record(name: string, fields: Readonly<Record<string, Type>>): Type {
  return { kind: "record", name, fields };
}

export function refused(reason: string): Type {
  return { kind: "refused", reason };
}

/** A function signature's type, as @bufbuild/cel declares it. */
export function fromCelType(type: CelType): Type {
  switch (type.kind) {
    case "list":
      return list(fromCelType(type.element));
    case "map":
      return map(fromCelType(type.key), fromCelType(type.value));
    case "object":
      if (type.name === "google.protobuf.Timestamp") return scalar("timestamp");
      if (type.name === "google.protobuf.Duration") return scalar("duration");
      return DYN;
    default:
      return scalar(type.name);
  }
}

/** As messages show it: `int`, `list(string)`, `map(string, list(string))`. */
export function display(type: Type): string {
  switch (type.kind) {
    case "scalar":
      return type.name;
    case "list":
      return `list(${display(type.element)})`;
    case "map":
      return `map(${display(type.key)}, ${display(type.value)})`;
    case "record":
      return type.name;
    case "refused":
      return "dyn";
  }
}

const isDyn = (type: Type) => type.kind === "scalar" && type.name === "dyn";

/**
 * Whether a value of type `given` may be passed where `wanted` is declared. `dyn` on either side defers the
 * question to request time; a record passes for a map of strings (it is one at request time).
 */
export function assignable(wanted: Type, given: Type): boolean {
  if (isDyn(wanted) || isDyn(given) || given.kind === "refused") return true;
  if (given.kind === "record") return wanted.kind === "map" && assignable(wanted.key, STRING);
  switch (wanted.kind) {
    case "scalar":
      return given.kind === "scalar" && given.name === wanted.name;
    case "list":
      return given.kind === "list" && assignable(wanted.element, given.element);
    case "map":
      return given.kind === "map" && assignable(wanted.key, given.key) && assignable(wanted.value, given.value);
    default:
      return false;
  }
}

const NUMERIC = new Set<string>(["int", "uint", "double"]);

/** Whether `==` / `!=` between the two can ever be true (CEL compares numbers across int, uint and double). */
export function comparable(left: Type, right: Type): boolean {
  if (left.kind === "scalar" && right.kind === "scalar") {
    if (NUMERIC.has(left.name) && NUMERIC.has(right.name)) return true;
    if (left.name === "null_type" || right.name === "null_type") return true;
  }
  if (left.kind === "list" && right.kind === "list") return comparable(left.element, right.element);
  if (left.kind === "map" && right.kind === "map") return comparable(left.key, right.key) && comparable(left.value, right.value);
  return assignable(left, right) || assignable(right, left);
}

/** The type of a value that is one of `types` (list elements, the branches of ?:): theirs if all agree, else dyn. */
export function join(types: readonly Type[]): Type {
  if (types.length === 0) return DYN;
  const first = display(types[0]);
  return types.every((type) => display(type) === first) ? types[0] : DYN;
}
