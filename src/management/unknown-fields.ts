/**
 * The 400 for fields a body's schema does not know: names them, lists the known ones (as ngrok's
 * ERR_NGROK_214 does) and suggests the near one for a misspelling: `nam` → did you mean `name`?
 */

import { z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../errors.ts";
import { nearestName } from "../nearest-name.ts";

/** Unknown fields listed in `details.unknown_fields`; a body of 64 KiB could carry thousands. */
export const MAX_REPORTED_UNKNOWN_FIELDS = 10;
/** Characters of a client's field name echoed back; longer names are cut and end with "…". */
export const MAX_ECHOED_FIELD_CHARS = 100;
/** Wrappers unwrapped looking for an object's shape (optional, default, pipe, …); schemas here nest two or three. */
const MAX_UNWRAP = 8;

/** The issue zod reports for keys a strict object does not declare. */
export type UnrecognizedKeysIssue = Extract<z.core.$ZodIssue, { code: "unrecognized_keys" }>;

/** `name`, `module.num_buckets`, `items[2].id`. */
export function fieldPath(path: readonly PropertyKey[], prefix: readonly PropertyKey[] = []): string {
  let out = "";
  for (const segment of [...prefix, ...path]) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out === "" ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

function echoed(name: string): string {
  return name.length <= MAX_ECHOED_FIELD_CHARS ? name : `${name.slice(0, MAX_ECHOED_FIELD_CHARS - 1)}…`;
}

function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  let current = schema;
  for (let i = 0; i < MAX_UNWRAP; i++) {
    const def = current._zod.def as { innerType?: z.core.$ZodType; in?: z.core.$ZodType };
    const inner = def.innerType ?? def.in;
    if (inner === undefined) break;
    current = inner;
  }
  return current;
}

/** The field names the object at `path` of `schema` declares; none when the path leads elsewhere. */
export function knownFieldsAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let current = unwrap(schema);
  for (const segment of path) {
    if (current instanceof z.ZodObject && typeof segment === "string" && Object.hasOwn(current.shape, segment)) {
      current = unwrap(current.shape[segment]);
    } else if (current instanceof z.ZodArray && typeof segment === "number") {
      current = unwrap(current.element);
    } else {
      return [];
    }
  }
  return current instanceof z.ZodObject ? Object.keys(current.shape) : [];
}

/**
 * 400 ERR_SVC_214 naming the first unknown field, and the known field nearest it when it looks misspelt;
 * `details.unknown_fields` lists at most {@link MAX_REPORTED_UNKNOWN_FIELDS}, `details.known_fields` the
 * object's fields. `schema`: the one validated (for the known names); `prefix` places it inside the body.
 */
export function unknownFieldError(issue: UnrecognizedKeysIssue, schema: z.core.$ZodType | undefined, prefix: readonly PropertyKey[] = []): ServiceError {
  const known = schema ? knownFieldsAt(schema, issue.path) : [];
  const first = issue.keys[0];
  const field = echoed(fieldPath([...issue.path, first], prefix));
  const unknown = issue.keys.slice(0, MAX_REPORTED_UNKNOWN_FIELDS).map((key) => echoed(fieldPath([...issue.path, key], prefix)));
  const near = nearestName(first, known);
  const hint = near !== undefined ? `; did you mean '${fieldPath([...issue.path, near], prefix)}'?` : ".";
  return new ServiceError(400, ErrorCode.unknownField, `The field '${field}' is not a known field${hint}`, {
    details: {
      field,
      unknown_fields: unknown,
      ...(known.length > 0 ? { known_fields: known } : {}),
      ...(near !== undefined ? { did_you_mean: fieldPath([...issue.path, near], prefix) } : {}),
    },
  });
}
