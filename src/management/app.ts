/**
 * The management API: a Hono app served as the gateway's `management` upstream. Order of checks on every
 * request: credentials (401), Service-Version (400), path and method (404/405), query and body (400),
 * then the resource (404).
 */

import { OpenAPIHono } from "@hono/zod-openapi";
import type { Env } from "../env.ts";
import { apiKeyAuth } from "./auth.ts";
import type { ManagementEnv } from "./context.ts";
import { handleError, notFoundOrMethodNotAllowed, operationId, type ServedOperation } from "./error-handler.ts";
import { serveOpenApi } from "./openapi.ts";
import { pathPattern } from "./operation.ts";
import { botUsersRouter } from "./routes/bot-users.ts";
import { edgeRouteModulesRouter } from "./routes/edge-route-modules.ts";
import { tunnelsRouter } from "./routes/tunnels.ts";
import { serviceVersion } from "./version.ts";

function buildApp(): OpenAPIHono<ManagementEnv> {
  const api = new OpenAPIHono<ManagementEnv>();
  api.use(operationId());
  serveOpenApi(api);
  api.use(apiKeyAuth(), serviceVersion());
  api.route("/", botUsersRouter);
  api.route("/", edgeRouteModulesRouter);
  api.route("/", tunnelsRouter);

  let served: ServedOperation[] | undefined;
  const operations = () =>
    (served ??= api.openAPIRegistry.definitions.flatMap((definition) =>
      definition.type === "route" ? [{ method: definition.route.method.toUpperCase(), pattern: pathPattern(definition.route.path) }] : [],
    ));
  api.notFound(notFoundOrMethodNotAllowed(operations));
  api.onError(handleError);
  return api;
}

const app = buildApp();

/** The `management` upstream of the gateway. */
export function handleManagement(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> | Response {
  return app.fetch(request, env, ctx);
}

export { app as managementApp };
