/** `/tunnel_sessions`: the account's online agent sessions, read from the tunnel registry (list, get). */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { getTunnelSession, listTunnelSessions, type TunnelSessionRecord } from "../../tunnels/registry-client.ts";
import { requestOrigin, type ManagementContext, type ManagementEnv } from "../context.ts";
import { errorResponses, operation } from "../operation.ts";
import { pageLinks, pageQuerySchema, parsePageRequest } from "../pagination.ts";
import { refSchema, timestampSchema, uriSchema } from "../schemas.ts";
import { text } from "../text.ts";

export const TUNNEL_SESSION_ID_PREFIX = "ts";

export const tunnelSessionSchema = z
  .object({
    id: z.string().openapi({ example: "ts_2abcdefghijklmnopqrstuvwxyz" }),
    uri: uriSchema("Absolute URL of the tunnel session."),
    agent_version: z.string().openapi({ description: "Version the agent named when it said hello (at most 64 characters)." }),
    credential: refSchema.openapi({
      description: "The API key the agent authenticated with, by its public id (`cr_…`, derived from the key's configured hash; never the hash).",
    }),
    ip: z.string().openapi({ description: 'Address the agent connected from; `""` when unknown.' }),
    metadata: z.string().openapi({ description: 'The agent\'s configured metadata (at most 4096 characters); `""` when none.' }),
    os: z.string().openapi({ description: 'Operating system the agent named (at most 64 characters); `""` when it did not say.' }),
    region: z.string().openapi({ description: "Ingress instance the agent is connected to." }),
    started_at: timestampSchema,
    transport: z.string().openapi({ description: "Tunnel protocol of the session: `tollgate/v1` (the reference API says `ngrok/v2` or `ssh`)." }),
  })
  .openapi("TunnelSession", { description: "An online agent session: one agent connection carrying its tunnels." });

export const tunnelSessionListSchema = z
  .object({
    tunnel_sessions: z.array(tunnelSessionSchema),
    uri: uriSchema("Absolute URL of the list."),
    next_page_uri: uriSchema("Absolute URL of the next page, or null on the last page.").nullable(),
  })
  .openapi("TunnelSessionList");

type TunnelSession = z.output<typeof tunnelSessionSchema>;

/**
 * The registry's record with absolute `uri`s. The credential is named with the reference API's path
 * (`/credentials/{id}`); this API does not serve credentials.
 */
export function renderTunnelSession(origin: string, record: TunnelSessionRecord): TunnelSession {
  return {
    id: record.id,
    uri: `${origin}/tunnel_sessions/${record.id}`,
    agent_version: record.agent_version,
    credential: { id: record.credential.id, uri: `${origin}/credentials/${record.credential.id}` },
    ip: record.ip,
    metadata: record.metadata,
    os: record.os,
    region: record.region,
    started_at: record.started_at,
    transport: record.transport,
  };
}

const json = <S extends z.ZodType>(schema: S) => ({ content: { "application/json": { schema } } });

export const tunnelSessionsRouter = new OpenAPIHono<ManagementEnv>();

operation(
  tunnelSessionsRouter,
  createRoute({
    method: "get",
    path: "/tunnel_sessions",
    summary: "List online tunnel sessions, newest first",
    tags: ["Tunnel sessions"],
    request: { query: pageQuerySchema },
    responses: { 200: { description: "A page of online tunnel sessions.", ...json(tunnelSessionListSchema) }, ...errorResponses() },
  }),
  async (c: ManagementContext) => {
    const request = parsePageRequest(new URL(c.req.url), TUNNEL_SESSION_ID_PREFIX);
    const page = await listTunnelSessions(c.env, c.get("accountId"), request.beforeId, request.limit);
    const origin = requestOrigin(c);
    return c.json(
      { tunnel_sessions: page.items.map((record) => renderTunnelSession(origin, record)), ...pageLinks(`${origin}/tunnel_sessions`, request, page) },
      200,
    );
  },
);

operation(
  tunnelSessionsRouter,
  createRoute({
    method: "get",
    path: "/tunnel_sessions/{id}",
    summary: "Get an online tunnel session",
    tags: ["Tunnel sessions"],
    request: { params: z.object({ id: text().openapi({ param: { name: "id", in: "path" } }) }) },
    responses: { 200: { description: "The tunnel session.", ...json(tunnelSessionSchema) }, ...errorResponses(404) },
  }),
  async (c: ManagementContext) => {
    const id = c.req.param("id") ?? "";
    const record = await getTunnelSession(c.env, c.get("accountId"), id);
    if (!record) throw new ServiceError(404, ErrorCode.notFound, `No online tunnel session '${id}' exists in this account.`, { details: { id } });
    return c.json(renderTunnelSession(requestOrigin(c), record), 200);
  },
);
