/** What the management API accepts as text: well-formed Unicode, counted in code points. */

import { z } from "@hono/zod-openapi";

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
  const schema = z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") }).superRefine((value, ctx) => {
    if (!isWellFormed(value)) {
      ctx.addIssue({ code: "custom", message: NOT_WELL_FORMED_MESSAGE });
    } else if (length !== undefined) {
      const count = characterCount(value);
      if (count < length.min || count > length.max) ctx.addIssue({ code: "custom", message: `must be ${length.min} to ${length.max} characters` });
    }
  });
  return length === undefined ? schema : schema.openapi({ minLength: length.min, maxLength: length.max });
}
