/** JSON request bodies: read, parse and validate against a zod schema, with errors that name the field. */

import type { z } from "@hono/zod-openapi";
import { bytesWithin } from "../bounded-read.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import type { ManagementContext } from "./context.ts";
import { fieldPath, unknownFieldError } from "./unknown-fields.ts";
import { decodeUtf8 } from "./utf8.ts";

/** Larger bodies are refused before parsing; every body of this API is a few hundred bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * One problem of a failed parse as a 400. Unknown fields come first, since a misspelt field is also the
 * reason a required one is missing (`{"nam": "x"}`): ERR_SVC_214 naming it, with the near known field
 * (unknown-fields.ts). Otherwise the first missing, wrongly typed or out-of-range value → ERR_SVC_215 naming
 * it. `prefix` places the schema inside the body; `schema` (the one validated) names the known fields.
 */
export function validationError(error: z.ZodError, prefix: readonly PropertyKey[] = [], schema?: z.ZodType): ServiceError {
  const unknown = error.issues.find((issue) => issue.code === "unrecognized_keys");
  if (unknown) return unknownFieldError(unknown, schema, prefix);
  const issue = error.issues[0];
  const field = fieldPath(issue.path, prefix);
  return new ServiceError(400, ErrorCode.invalidValue, `The field '${field}' ${issue.message}.`, { details: { field } });
}

/** Validates an already parsed value; throws the 400 of {@link validationError}. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, prefix: readonly PropertyKey[] = []): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(result.error, prefix, schema);
  return result.data;
}

function isJsonMediaType(contentType: string): boolean {
  const mediaType = contentType.split(";")[0].trim().toLowerCase();
  return mediaType === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}

/**
 * The body as a JSON object. A `Content-Type` other than JSON → 415 ERR_SVC_212 (a missing one is read as
 * JSON); more than {@link MAX_BODY_BYTES} bytes, not UTF-8, empty, malformed or not an object → 400 ERR_SVC_213.
 */
export async function readJsonObject(c: ManagementContext): Promise<Record<string, unknown>> {
  const contentType = c.req.header("content-type");
  if (contentType !== undefined && !isJsonMediaType(contentType)) {
    throw new ServiceError(415, ErrorCode.unsupportedMediaType, "The request body must be JSON, sent with 'Content-Type: application/json'.", {
      details: {
        content_type: contentType.slice(0, 100),
      },
    });
  }
  const declaredLength = Number(c.req.header("content-length") ?? "0");
  if (declaredLength > MAX_BODY_BYTES) throw tooLarge();
  // Read chunk by chunk and given up past the bound: a chunked body declares no length, and reading it whole
  // first would hold whatever the client sends.
  const body = c.req.raw.body;
  const read = body
    ? await bytesWithin(body, MAX_BODY_BYTES).catch((error: unknown) => {
        throw new ServiceError(400, ErrorCode.unparseableBody, `The request body broke off: ${(error as Error).message}`, { cause: error });
      })
    : { ok: true as const, bytes: new Uint8Array(0) };
  if (!read.ok) throw tooLarge();
  const bytes = read.bytes;
  // Decoded strictly: replacing ill-formed bytes by U+FFFD would store something the client never sent.
  const decoded = decodeUtf8(bytes);
  if (!decoded.ok) {
    throw new ServiceError(400, ErrorCode.unparseableBody, `The request body is not valid UTF-8: the bytes at offset ${decoded.offset} are ill-formed.`, {
      details: {
        offset: decoded.offset,
      },
    });
  }
  const text = decoded.text;
  if (text.trim() === "") {
    throw new ServiceError(400, ErrorCode.unparseableBody, "The request body is empty; send a JSON object.");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ServiceError(400, ErrorCode.unparseableBody, `The request body is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ServiceError(400, ErrorCode.unparseableBody, "The request body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

/** Reads the JSON body and validates it against `schema`. */
export async function readJsonBody<S extends z.ZodType>(c: ManagementContext, schema: S): Promise<z.output<S>> {
  return validate(schema, await readJsonObject(c));
}

function tooLarge(): ServiceError {
  return new ServiceError(400, ErrorCode.unparseableBody, `The request body is larger than ${MAX_BODY_BYTES} bytes.`);
}
