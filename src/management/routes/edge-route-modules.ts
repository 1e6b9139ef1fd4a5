/**
 * `/edges/https/{edge_id}/routes/{id}/{circuit_breaker|websocket_tcp_converter}`: PUT (replace), GET,
 * DELETE the modules of a route declared in policies/gateway.yaml.
 */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { accountStore } from "../account-store.ts";
import { readJsonObject, validate } from "../body.ts";
import type { ManagementContext, ManagementEnv } from "../context.ts";
import { findEdgeRoute } from "../edge-routes.ts";
import { MODULE_KINDS, MODULE_SCHEMAS, type ModuleKind } from "../modules.ts";
import { errorResponses, operation } from "../operation.ts";
import { text } from "../text.ts";

const TITLES: Record<ModuleKind, string> = { circuit_breaker: "circuit breaker", websocket_tcp_converter: "websocket TCP converter" };

const routeParams = z.object({
  edge_id: text().openapi({ param: { name: "edge_id", in: "path" }, description: "Edge id from policies/gateway.yaml." }),
  id: text().openapi({ param: { name: "id", in: "path" }, description: "Route id of that edge." }),
});

/** The ids the reference clients repeat in the body; when present they must name the route of the path. */
const pathEcho = {
  edge_id: text().optional(),
  id: text().optional(),
};

function wrappedSchema(kind: ModuleKind) {
  return z.strictObject({ ...pathEcho, module: MODULE_SCHEMAS[kind] });
}

/**
 * The module of a PUT body, which is either the module itself (`{"enabled": true, …}`) or wrapped as
 * `{"module": {…}}`, optionally with `edge_id` and `id`. Errors name the field as sent (`module.num_buckets`).
 */
function moduleFromBody(kind: ModuleKind, body: Record<string, unknown>, edgeId: string, routeId: string): object {
  const { edge_id, id, ...rest } = body;
  validate(z.strictObject(pathEcho).partial(), { edge_id, id });
  if (edge_id !== undefined && edge_id !== edgeId) {
    throw new ServiceError(400, ErrorCode.invalidValue, "The field 'edge_id' must equal the edge id of the path.", { details: { field: "edge_id" } });
  }
  if (id !== undefined && id !== routeId) {
    throw new ServiceError(400, ErrorCode.invalidValue, "The field 'id' must equal the route id of the path.", { details: { field: "id" } });
  }
  if ("module" in rest) {
    const { module, ...extra } = rest;
    validate(z.strictObject({ module: z.unknown() }), { module, ...extra });
    if (typeof module !== "object" || module === null || Array.isArray(module)) {
      throw new ServiceError(400, ErrorCode.invalidValue, "The field 'module' must be a JSON object.", { details: { field: "module" } });
    }
    return validate(MODULE_SCHEMAS[kind], module, ["module"]);
  }
  return validate(MODULE_SCHEMAS[kind], rest);
}

function target(c: ManagementContext): { edgeId: string; routeId: string } {
  const edgeId = c.req.param("edge_id") ?? "";
  const routeId = c.req.param("id") ?? "";
  findEdgeRoute(c.get("edges"), c.env, c.get("accountId"), edgeId, routeId);
  return { edgeId, routeId };
}

export const edgeRouteModulesRouter = new OpenAPIHono<ManagementEnv>();

for (const kind of MODULE_KINDS) {
  const path = `/edges/https/{edge_id}/routes/{id}/${kind}`;
  const schema = MODULE_SCHEMAS[kind];
  const title = TITLES[kind];
  const tags = ["HTTPS edge route modules"];
  const moduleResponse = { content: { "application/json": { schema } } };

  operation(
    edgeRouteModulesRouter,
    createRoute({
      method: "put",
      path,
      summary: `Replace the ${title} module of a route`,
      description: 'The body is the module, or the module wrapped as `{"module": {…}}`. Omitted fields take their defaults.',
      tags,
      request: {
        params: routeParams,
        body: { required: true, content: { "application/json": { schema: z.union([schema, wrappedSchema(kind)]) } } },
      },
      responses: { 200: { description: "The module as stored.", ...moduleResponse }, ...errorResponses(404, 415) },
    }),
    async (c) => {
      const { edgeId, routeId } = target(c);
      const module = moduleFromBody(kind, await readJsonObject(c), edgeId, routeId);
      await accountStore(c.env, c.get("accountId")).putRouteModule(edgeId, routeId, kind, module);
      return c.json(module, 200);
    },
  );

  operation(
    edgeRouteModulesRouter,
    createRoute({
      method: "get",
      path,
      summary: `Get the ${title} module of a route`,
      tags,
      request: { params: routeParams },
      responses: { 200: { description: "The module.", ...moduleResponse }, ...errorResponses(404) },
    }),
    async (c) => {
      const { edgeId, routeId } = target(c);
      const modules = await accountStore(c.env, c.get("accountId")).getRouteModules(edgeId, routeId);
      const module = modules[kind];
      if (!module) {
        throw new ServiceError(404, ErrorCode.notFound, `The route '${routeId}' of edge '${edgeId}' has no ${title} module.`, {
          details: {
            edge_id: edgeId,
            route_id: routeId,
            module: kind,
          },
        });
      }
      return c.json(module, 200);
    },
  );

  operation(
    edgeRouteModulesRouter,
    createRoute({
      method: "delete",
      path,
      summary: `Remove the ${title} module of a route`,
      description: "Idempotent: 204 whether or not the route had the module.",
      tags,
      request: { params: routeParams },
      responses: { 204: { description: "Removed; no body." }, ...errorResponses(404) },
    }),
    async (c) => {
      const { edgeId, routeId } = target(c);
      await accountStore(c.env, c.get("accountId")).deleteRouteModule(edgeId, routeId, kind);
      return c.body(null, 204);
    },
  );
}
