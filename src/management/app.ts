/**
 * The management API: a Hono app served as the gateway's `management` upstream. Order of checks on every
 * request: credentials (401), Service-Version (400), path and method (404/405), query and body (400),
 * then the resource (404).
 */

import { OpenAPIHono } from "@hono/zod-openapi";
import { apiKeyAuth } from "./auth.ts";
import type { EdgeDirectory, ManagementEnv, TunnelDirectory } from "./context.ts";
import { handleError, notFoundOrMethodNotAllowed, operationId, type ServedOperation } from "./error-handler.ts";
import { serveOpenApi } from "./openapi.ts";
import { pathPattern } from "./operation.ts";
import { edgeRouteModulesRouter } from "./routes/edge-route-modules.ts";
import { httpsEdgesRouter } from "./routes/https-edges.ts";
import { rateLimitBucketsRouter, type RateLimitDirectory } from "./routes/rate-limit-buckets.ts";
import { rateLimitOverridesRouter } from "./routes/rate-limit-overrides.ts";
import { botUsersRouter, serviceUsersRouter } from "./routes/service-users.ts";
import { simulationsRouter } from "./routes/simulations.ts";
import { tunnelSessionsRouter } from "./routes/tunnel-sessions.ts";
import { tunnelsRouter } from "./routes/tunnels.ts";
import { serviceVersion } from "./version.ts";

/** What the management API needs from outside its layer; worker.ts wires it. */
export interface ManagementDeps {
  readonly edges: EdgeDirectory;
  /** The rate-limit actions of the routes, for reading their buckets back; absent: that endpoint is not served. */
  readonly rateLimits?: RateLimitDirectory;
  /** The accounts' online tunnels, for rate-limit overrides of a tunnel; absent: no tunnel can be named. */
  readonly tunnels?: TunnelDirectory;
}

/** The management API app; worker.ts builds one per isolate and serves it as the gateway's `management` upstream. */
export function createManagementApp({ edges, rateLimits, tunnels }: ManagementDeps): OpenAPIHono<ManagementEnv> {
  const api = new OpenAPIHono<ManagementEnv>();
  api.use(async (c, next) => {
    c.set("edges", edges);
    if (tunnels) c.set("tunnels", tunnels);
    await next();
  });
  api.use(operationId());
  serveOpenApi(api);
  api.use(apiKeyAuth(), serviceVersion());
  api.route("/", serviceUsersRouter);
  api.route("/", botUsersRouter);
  api.route("/", edgeRouteModulesRouter);
  api.route("/", tunnelsRouter);
  api.route("/", tunnelSessionsRouter);
  api.route("/", httpsEdgesRouter);
  api.route("/", simulationsRouter);
  api.route("/", rateLimitOverridesRouter);
  if (rateLimits) api.route("/", rateLimitBucketsRouter(rateLimits));

  let served: ServedOperation[] | undefined;
  const operations = () =>
    (served ??= api.openAPIRegistry.definitions.flatMap((definition) =>
      definition.type === "route" ? [{ method: definition.route.method.toUpperCase(), pattern: pathPattern(definition.route.path) }] : [],
    ));
  api.notFound(notFoundOrMethodNotAllowed(operations));
  api.onError(handleError);
  return api;
}
