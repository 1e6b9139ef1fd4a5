/**
 * Declares one operation of the API: its route (documented in the OpenAPI registry from the same zod
 * schemas the handler validates with) and the handler Hono dispatches to. Validation happens in the
 * handler (body.ts, pagination.ts), so every failure gets this API's error codes.
 */

import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Handler } from "hono";
import type { ManagementEnv } from "./context.ts";
import { errorEnvelopeSchema, versionHeaders } from "./schemas.ts";

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid request: bad header, query, JSON or field value (the details name the field).",
  401: "Missing or invalid API key.",
  404: "No such resource.",
  415: "The body is not JSON.",
  429: "Rate limited by the gateway's management policy; see `retry-after`.",
};

/** Error responses of an operation, all in the one envelope. 400, 401 and 429 apply to every operation. */
export function errorResponses(...statuses: number[]): RouteConfig["responses"] {
  const responses: RouteConfig["responses"] = {};
  for (const status of [...new Set([400, 401, 429, ...statuses])].sort()) {
    responses[status] = { description: ERROR_DESCRIPTIONS[status] ?? "Error.", content: { "application/json": { schema: errorEnvelopeSchema } } };
  }
  return responses;
}

/** Registers `route` for the OpenAPI document (with the version header) and mounts `handler` on `router`. */
export function operation(router: OpenAPIHono<ManagementEnv>, route: RouteConfig, handler: Handler<ManagementEnv>): void {
  router.openAPIRegistry.registerPath({
    security: [{ bearerAuth: [] }],
    ...route,
    request: { headers: versionHeaders, ...route.request },
  });
  router.on(route.method.toUpperCase(), [honoPath(route.path)], handler);
}

/** `/bot_users/{id}` → `/bot_users/:id`. */
export function honoPath(path: string): string {
  return path.replaceAll(/\{([^}]+)\}/g, ":$1");
}

/** A matcher for an OpenAPI path template: `{x}` matches one non-empty segment. */
export function pathPattern(path: string): RegExp {
  const escaped = path
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith("{") ? "[^/]+" : part.replaceAll(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${escaped}$`);
}
