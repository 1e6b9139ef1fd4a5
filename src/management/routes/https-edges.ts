/**
 * `/edges/https` and `/edges/https/{edge_id}/routes/{id}`: the edges and routes of policies/gateway.yaml,
 * read-only, in the reference API's shapes. Only the edge owner account sees them (edge-routes.ts).
 */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { accountStore } from "../account-store.ts";
import { requestOrigin, type DirectoryEdge, type ManagementContext, type ManagementEnv } from "../context.ts";
import { edgeOwnerAccount, findEdgeRoute } from "../edge-routes.ts";
import { circuitBreakerSchema, websocketTcpConverterSchema } from "../modules.ts";
import { errorResponses, operation } from "../operation.ts";
import { pageLinks, pageOf, pageQuerySchema, parsePageRequest } from "../pagination.ts";
import { timestampSchema, uriSchema } from "../schemas.ts";
import type { EdgeFacts } from "../store/edges-seen.ts";
import { text } from "../text.ts";

/** Ids of edges as policies/gateway.yaml allows them (what `before_id` may name in the list). */
const EDGE_ID = /^[A-Za-z0-9_-]{1,64}$/;
const EDGE_IDS = { test: (id: string) => EDGE_ID.test(id), form: "an edge id: 1 to 64 letters, digits, '_' or '-'" };

export const httpsEdgeRouteSchema = z
  .object({
    edge_id: z.string(),
    id: z.string(),
    created_at: timestampSchema.openapi({ description: "When this API first showed the route (the config carries no dates)." }),
    match_type: z.literal("path_prefix").openapi({ description: "Routes of policies/gateway.yaml match a path prefix." }),
    match: z.string().openapi({ example: "/demo" }),
    uri: uriSchema("Absolute URL of the route."),
    circuit_breaker: circuitBreakerSchema.optional().openapi({ description: "The route's circuit breaker module; omitted when it has none." }),
    websocket_tcp_converter: websocketTcpConverterSchema
      .optional()
      .openapi({ description: "The route's websocket TCP converter module; omitted when it has none." }),
  })
  .openapi("HTTPSEdgeRoute", { description: "A route of an edge of policies/gateway.yaml. Modules it does not have are omitted." });

export const httpsEdgeSchema = z
  .object({
    id: z.string().openapi({ example: "edghts_local" }),
    created_at: timestampSchema.openapi({ description: "When this API first showed the edge (the config carries no dates)." }),
    uri: uriSchema("Absolute URL of the edge."),
    hostports: z.array(z.string()).openapi({ description: "`<host name>:<port>` for each configured host name, on the port this API was reached on." }),
    routes: z.array(httpsEdgeRouteSchema),
  })
  .openapi("HTTPSEdge", { description: "An edge of policies/gateway.yaml (read-only)." });

export const httpsEdgeListSchema = z
  .object({
    https_edges: z.array(httpsEdgeSchema),
    uri: uriSchema("Absolute URL of the list."),
    next_page_uri: uriSchema("Absolute URL of the next page, or null on the last page.").nullable(),
  })
  .openapi("HTTPSEdgeList");

type HttpsEdge = z.output<typeof httpsEdgeSchema>;
type HttpsEdgeRoute = z.output<typeof httpsEdgeRouteSchema>;

function renderRoute(origin: string, edgeId: string, route: DirectoryEdge["routes"][number], facts: EdgeFacts): HttpsEdgeRoute {
  const { createdAt, modules } = facts.routes[route.id];
  return {
    edge_id: edgeId,
    id: route.id,
    created_at: createdAt,
    match_type: "path_prefix",
    match: route.match,
    uri: `${origin}/edges/https/${edgeId}/routes/${route.id}`,
    ...(modules.circuit_breaker ? { circuit_breaker: modules.circuit_breaker } : {}),
    ...(modules.websocket_tcp_converter ? { websocket_tcp_converter: modules.websocket_tcp_converter } : {}),
  };
}

function renderEdge(origin: string, port: string, edge: DirectoryEdge, facts: EdgeFacts): HttpsEdge {
  return {
    id: edge.id,
    created_at: facts.createdAt,
    uri: `${origin}/edges/https/${edge.id}`,
    hostports: edge.hostnames.map((hostname) => `${hostname}:${port}`),
    routes: edge.routes.map((route) => renderRoute(origin, edge.id, route, facts)),
  };
}

/** The port the request came to: the edges are served on it too. */
function requestPort(c: ManagementContext): string {
  const url = new URL(c.req.url);
  return url.port || (url.protocol === "https:" ? "443" : "80");
}

async function edgeFacts(c: ManagementContext, edges: readonly DirectoryEdge[]): Promise<EdgeFacts[]> {
  if (edges.length === 0) return [];
  const outlines = edges.map((edge) => ({ edgeId: edge.id, routeIds: edge.routes.map((route) => route.id) }));
  return accountStore(c.env, c.get("accountId")).describeEdges(outlines);
}

/** The edges the caller's account sees: all of them for the edge owner, none for any other account. */
function visibleEdges(c: ManagementContext): readonly DirectoryEdge[] {
  return c.get("accountId") === edgeOwnerAccount(c.env) ? c.get("edges").edges(c.env) : [];
}

const json = <S extends z.ZodType>(schema: S) => ({ content: { "application/json": { schema } } });
const tags = ["HTTPS edges"];

export const httpsEdgesRouter = new OpenAPIHono<ManagementEnv>();

operation(
  httpsEdgesRouter,
  createRoute({
    method: "get",
    path: "/edges/https",
    summary: "List the HTTPS edges of policies/gateway.yaml, by id descending",
    tags,
    request: { query: pageQuerySchema },
    responses: { 200: { description: "A page of edges.", ...json(httpsEdgeListSchema) }, ...errorResponses() },
  }),
  async (c: ManagementContext) => {
    const request = parsePageRequest(new URL(c.req.url), "edghts", EDGE_IDS);
    const page = pageOf(visibleEdges(c), request);
    const facts = await edgeFacts(c, page.items);
    const origin = requestOrigin(c);
    const port = requestPort(c);
    return c.json(
      { https_edges: page.items.map((edge, i) => renderEdge(origin, port, edge, facts[i])), ...pageLinks(`${origin}/edges/https`, request, page) },
      200,
    );
  },
);

operation(
  httpsEdgesRouter,
  createRoute({
    method: "get",
    path: "/edges/https/{id}",
    summary: "Get an HTTPS edge of policies/gateway.yaml with its routes",
    tags,
    request: { params: z.object({ id: text().openapi({ param: { name: "id", in: "path" } }) }) },
    responses: { 200: { description: "The edge.", ...json(httpsEdgeSchema) }, ...errorResponses(404) },
  }),
  async (c: ManagementContext) => {
    const id = c.req.param("id") ?? "";
    const edge = visibleEdges(c).find((candidate) => candidate.id === id);
    if (!edge) throw new ServiceError(404, ErrorCode.notFound, `No HTTPS edge '${id}' exists in this account.`, { details: { edge_id: id } });
    const [facts] = await edgeFacts(c, [edge]);
    return c.json(renderEdge(requestOrigin(c), requestPort(c), edge, facts), 200);
  },
);

operation(
  httpsEdgesRouter,
  createRoute({
    method: "get",
    path: "/edges/https/{edge_id}/routes/{id}",
    summary: "Get a route of an HTTPS edge of policies/gateway.yaml",
    tags,
    request: {
      params: z.object({
        edge_id: text().openapi({ param: { name: "edge_id", in: "path" } }),
        id: text().openapi({ param: { name: "id", in: "path" } }),
      }),
    },
    responses: { 200: { description: "The route.", ...json(httpsEdgeRouteSchema) }, ...errorResponses(404) },
  }),
  async (c: ManagementContext) => {
    const edgeId = c.req.param("edge_id") ?? "";
    const routeId = c.req.param("id") ?? "";
    findEdgeRoute(c.get("edges"), c.env, c.get("accountId"), edgeId, routeId);
    const edge = c.get("edges").edge(c.env, edgeId)!;
    const route = edge.routes.find((candidate) => candidate.id === routeId)!;
    const [facts] = await edgeFacts(c, [{ ...edge, routes: [route] }]);
    return c.json(renderRoute(requestOrigin(c), edgeId, route, facts), 200);
  },
);
