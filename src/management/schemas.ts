/** Schemas shared by every resource: the error envelope, references, and the documented request headers. */

import { z } from "@hono/zod-openapi";
import { SUPPORTED_VERSION, VERSION_HEADER } from "./version.ts";

export const errorEnvelopeSchema = z
  .object({
    error_code: z.string().openapi({ example: "ERR_SVC_204", description: "`ERR_SVC_<n>`: stable; see docs/management-api.md." }),
    status_code: z.int().openapi({ example: 404 }),
    msg: z.string().openapi({ description: "Human-readable; may change. Never contains the API key." }),
    details: z
      .object({ operation_id: z.string().openapi({ example: "op_2XYZ…" }) })
      .catchall(z.unknown())
      .openapi({ description: "Always has `operation_id`; validation errors add `field`." }),
  })
  .openapi("Error");

export const refSchema = z
  .object({ id: z.string(), uri: z.string().openapi({ format: "uri" }) })
  .openapi("Ref");

/** Documents the version header on every authenticated operation. */
export const versionHeaders = z.object({
  [VERSION_HEADER]: z.literal(SUPPORTED_VERSION).openapi({ description: "API version; required." }),
});

export const timestampSchema = z.string().openapi({ format: "date-time", description: "RFC 3339, UTC.", example: "2026-05-01T12:00:00Z" });

export function uriSchema(description: string) {
  return z.string().openapi({ format: "uri", description });
}

/**
 * Why a string field was refused: it holds an unpaired UTF-16 surrogate (`"\ud800"` in JSON), which is not
 * Unicode text. Stored, it would come back as U+FFFD and be three bytes long where it was counted as one.
 */
export const NOT_WELL_FORMED_MESSAGE = "must be well-formed Unicode text (it contains an unpaired surrogate such as \\ud800)";

/** `String.prototype.isWellFormed` (ES2024; Node 20 and workerd have it, this project's `lib` is ES2023). */
export function isWellFormed(value: string): boolean {
  return (value as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/**
 * Length as this API counts it: Unicode code points, so `é`, `界` and `🚀` are one character each — what a
 * person counts, what JSON Schema's `maxLength` counts, and what is stored and returned (a well-formed string
 * round-trips exactly). Not UTF-16 units (`🚀` would be two) nor UTF-8 bytes (four); a field of at most
 * `n` characters holds at most `4 × n` bytes of UTF-8.
 */
export function characterCount(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

export interface TextOptions {
  /** Inclusive bounds in characters (code points, see {@link characterCount}). */
  readonly length?: { readonly min: number; readonly max: number };
}

/**
 * The schema of every string the API accepts (body fields, query parameters): a string (`is required` /
 * `must be a string` otherwise), well-formed Unicode, and within `length` characters when given. An unpaired
 * surrogate is reported as such, never as a length problem.
 */
export function text(options: TextOptions = {}) {
  const { length } = options;
  const schema = z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .superRefine((value, ctx) => {
      if (!isWellFormed(value)) {
        ctx.addIssue({ code: "custom", message: NOT_WELL_FORMED_MESSAGE });
      } else if (length !== undefined) {
        const count = characterCount(value);
        if (count < length.min || count > length.max) ctx.addIssue({ code: "custom", message: `must be ${length.min} to ${length.max} characters` });
      }
    });
  return length === undefined ? schema : schema.openapi({ minLength: length.min, maxLength: length.max });
}
