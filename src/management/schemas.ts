/** Schemas shared by every resource: the error envelope, references, and the documented request headers. */

import { z } from "@hono/zod-openapi";
import { SUPPORTED_VERSION, VERSION_HEADER, VERSION_HEADER_ALIAS } from "./version.ts";

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

export const refSchema = z.object({ id: z.string(), uri: z.string().openapi({ format: "uri" }) }).openapi("Ref");

/** Documents the version header on every authenticated operation. */
export const versionHeaders = z.object({
  [VERSION_HEADER]: z
    .literal(SUPPORTED_VERSION)
    .optional()
    .openapi({ description: `API version; this header or its alias ${VERSION_HEADER_ALIAS} is required.` }),
  [VERSION_HEADER_ALIAS]: z
    .literal(SUPPORTED_VERSION)
    .optional()
    .openapi({ description: `Alias of ${VERSION_HEADER} (what the reference API's clients send).` }),
});

export const timestampSchema = z.string().openapi({ format: "date-time", description: "RFC 3339, UTC.", example: "2026-05-01T12:00:00Z" });

export function uriSchema(description: string) {
  return z.string().openapi({ format: "uri", description });
}
