/** `/tunnels`: the account's online tunnels, read from the tunnel registry (list, get). */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { getOnlineTunnel, listOnlineTunnels, type TunnelRecord } from "../../tunnels/registry-client.ts";
import { requestOrigin, type ManagementContext, type ManagementEnv } from "../context.ts";
import { errorResponses, operation } from "../operation.ts";
import { pageLinks, pageOf, pageQuerySchema, parsePageRequest } from "../pagination.ts";
import { refSchema, timestampSchema, uriSchema } from "../schemas.ts";
import { text } from "../text.ts";

export const TUNNEL_ID_PREFIX = "tn";

export const tunnelSchema = z
  .object({
    id: z.string().openapi({ example: "tn_2abcdefghijklmnopqrstuvwxyz" }),
    public_url: z.string().optional().openapi({ description: "Public URL of the tunnel's endpoint." }),
    started_at: timestampSchema,
    metadata: z.string().openapi({ description: "The tunnel's metadata from the agent's configuration; `\"\"` when none was configured." }),
    proto: z.string().optional().openapi({ description: "`http`, `https`, `tcp` or `tls`." }),
    region: z.string(),
    tunnel_session: refSchema,
    endpoint: refSchema.optional(),
    pooling_enabled: z
      .boolean()
      .optional()
      .openapi({ description: "Present (true) on a member of an endpoint pool: tunnels of the account sharing this `public_url`, each listed on its own." }),
    labels: z.record(z.string(), z.string()).optional(),
    backends: z.array(refSchema).optional(),
    forwards_to: z.string().optional().openapi({ description: "Address the agent forwards the tunnel's traffic to." }),
  })
  .openapi("Tunnel", { description: "An online tunnel. Fields that do not apply are omitted." });

export const tunnelListSchema = z
  .object({
    tunnels: z.array(tunnelSchema),
    uri: uriSchema("Absolute URL of the list."),
    next_page_uri: uriSchema("Absolute URL of the next page, or null on the last page.").nullable(),
  })
  .openapi("TunnelList");

type Tunnel = z.output<typeof tunnelSchema>;

/**
 * The registry's record with absolute `uri`s on its references, named with the reference API's paths
 * (this API serves `/tunnel_sessions`, not endpoints or backends). `metadata` is always present (`""`
 * when none was configured), as the reference API's typed clients declare it.
 */
export function renderTunnel(origin: string, record: TunnelRecord): Tunnel {
  const tunnel: Tunnel = {
    id: record.id,
    public_url: record.public_url,
    started_at: record.started_at,
    metadata: record.metadata ?? "",
    proto: record.proto,
    region: record.region,
    tunnel_session: { id: record.tunnel_session.id, uri: `${origin}/tunnel_sessions/${record.tunnel_session.id}` },
    endpoint: record.endpoint && { id: record.endpoint.id, uri: `${origin}/endpoints/${record.endpoint.id}` },
    pooling_enabled: record.pooling_enabled,
    labels: record.labels,
    backends: record.backends?.map((backend) => ({ id: backend.id, uri: `${origin}/backends/tunnel_group/${backend.id}` })),
    forwards_to: record.forwards_to,
  };
  // Fields that do not apply are omitted, not null.
  for (const key of Object.keys(tunnel) as Array<keyof Tunnel>) if (tunnel[key] === undefined) delete tunnel[key];
  return tunnel;
}

function notFound(id: string): ServiceError {
  return new ServiceError(404, ErrorCode.notFound, `No online tunnel '${id}' exists in this account.`, { details: { id } });
}

const json = <S extends z.ZodType>(schema: S) => ({ content: { "application/json": { schema } } });

export const tunnelsRouter = new OpenAPIHono<ManagementEnv>();

operation(
  tunnelsRouter,
  createRoute({
    method: "get",
    path: "/tunnels",
    summary: "List online tunnels, newest first",
    tags: ["Tunnels"],
    request: { query: pageQuerySchema },
    responses: { 200: { description: "A page of online tunnels.", ...json(tunnelListSchema) }, ...errorResponses() },
  }),
  async (c: ManagementContext) => {
    const request = parsePageRequest(new URL(c.req.url), TUNNEL_ID_PREFIX);
    const page = pageOf(await listOnlineTunnels(c.env, c.get("accountId")), request);
    const origin = requestOrigin(c);
    return c.json({ tunnels: page.items.map((record) => renderTunnel(origin, record)), ...pageLinks(`${origin}/tunnels`, request, page) }, 200);
  },
);

operation(
  tunnelsRouter,
  createRoute({
    method: "get",
    path: "/tunnels/{id}",
    summary: "Get an online tunnel",
    tags: ["Tunnels"],
    request: { params: z.object({ id: text().openapi({ param: { name: "id", in: "path" } }) }) },
    responses: { 200: { description: "The tunnel.", ...json(tunnelSchema) }, ...errorResponses(404) },
  }),
  async (c: ManagementContext) => {
    const id = c.req.param("id") ?? "";
    const record = await getOnlineTunnel(c.env, c.get("accountId"), id);
    if (!record) throw notFound(id);
    return c.json(renderTunnel(requestOrigin(c), record), 200);
  },
);
