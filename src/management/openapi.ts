/** `GET /openapi.json`: the OpenAPI 3.1 document, generated from the zod schemas the handlers validate with. */

import type { OpenAPIHono } from "@hono/zod-openapi";
import type { ManagementEnv } from "./context.ts";
import { SUPPORTED_VERSION } from "./version.ts";

export const OPENAPI_PATH = "/openapi.json";

const DESCRIPTION = [
  "The Tollgate management API. Every operation needs `Authorization: Bearer <API key>` and `Service-Version: 2`.",
  "Errors share one envelope `{error_code, status_code, msg, details}`; see docs/management-api.md.",
].join(" ");

/** Adds the bearer scheme to `api`'s registry and serves the document (no credentials needed). */
export function serveOpenApi(api: OpenAPIHono<ManagementEnv>): void {
  api.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "An API key configured in TOLLGATE_API_KEYS.",
  });
  let document: ReturnType<typeof api.getOpenAPI31Document> | undefined;
  api.get(OPENAPI_PATH, (c) => {
    document ??= api.getOpenAPI31Document({
      openapi: "3.1.0",
      info: { title: "Tollgate management API", version: SUPPORTED_VERSION, description: DESCRIPTION },
    });
    return c.json({ ...document, servers: [{ url: new URL(c.req.url).origin }] }, 200);
  });
}
