/**
 * Service users (ngrok's current name) and bot users (its former one, still served for old clients): one
 * store, two paths. `/service_users` and `/bot_users` each create, get, list (paginated, newest first),
 * update and delete the same records; only the list key, the uris and the schema names differ.
 */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { isId } from "../../ids.ts";
import { accountStore } from "../account-store.ts";
import { readJsonBody } from "../body.ts";
import { requestOrigin, type ManagementContext, type ManagementEnv } from "../context.ts";
import { errorResponses, operation } from "../operation.ts";
import { pageLinks, pageQuerySchema, parsePageRequest } from "../pagination.ts";
import { timestampSchema, uriSchema } from "../schemas.ts";
import { text } from "../text.ts";
import { BOT_USER_ID_PREFIX, type BotUserRecord } from "../store/bot-users.ts";

/** In characters, that is Unicode code points (see `characterCount`): at most 1,020 bytes of UTF-8. */
export const MAX_NAME_LENGTH = 255;

/** How one of the two paths names the resource. */
interface UserPath {
  /** `/service_users`. */
  readonly path: string;
  /** The list's key, the path without its slash: `service_users`. */
  readonly listKey: string;
  /** Schema names in the OpenAPI document: `ServiceUser`, `ServiceUserCreate`, … */
  readonly schemaName: string;
  /** In messages: `service user`. */
  readonly noun: string;
  readonly tag: string;
  /** ngrok deprecated `/bot_users` in favor of `/service_users`; the document says so. */
  readonly deprecated: boolean;
}

const SERVICE_USERS: UserPath = {
  path: "/service_users",
  listKey: "service_users",
  schemaName: "ServiceUser",
  noun: "service user",
  tag: "Service users",
  deprecated: false,
};

const BOT_USERS: UserPath = {
  path: "/bot_users",
  listKey: "bot_users",
  schemaName: "BotUser",
  noun: "bot user",
  tag: "Bot users",
  deprecated: true,
};

const json = <S extends z.ZodType>(schema: S) => ({ content: { "application/json": { schema } } });
const idParams = z.object({ id: text().openapi({ param: { name: "id", in: "path" } }) });

function schemasOf({ noun, schemaName, listKey }: UserPath) {
  const name = text({ length: { min: 1, max: MAX_NAME_LENGTH } }).openapi({
    description: `Human-readable name of the ${noun}, 1 … ${MAX_NAME_LENGTH} characters (Unicode code points; an emoji is one).`,
    example: "deploy-bot",
  });
  const active = z.boolean({ error: "must be true or false" }).openapi({ description: `Whether the ${noun} is active.` });
  const user = z
    .object({
      id: z.string().openapi({ example: "bot_2abcdefghijklmnopqrstuvwxyz", description: "Opaque; the same id on /service_users and /bot_users." }),
      uri: uriSchema(`Absolute URL of this ${noun}.`),
      name: z.string(),
      active: z.boolean(),
      created_at: timestampSchema,
    })
    .openapi(schemaName);
  return {
    user,
    create: z.strictObject({ name, active: active.default(true).openapi({ description: "Default `true`." }) }).openapi(`${schemaName}Create`),
    update: z
      .strictObject({
        id: text().optional().openapi({ description: "Tolerated for clients that send it; must equal the path id." }),
        name: name.optional(),
        active: active.optional(),
      })
      .openapi(`${schemaName}Update`),
    list: z
      .object({
        [listKey]: z.array(user),
        uri: uriSchema("Absolute URL of the list."),
        next_page_uri: uriSchema("Absolute URL of the next page, or null on the last page.").nullable(),
      })
      .openapi(`${schemaName}List`),
  };
}

/** The five operations of one path, on the one store. */
function usersRouter(at: UserPath): OpenAPIHono<ManagementEnv> {
  const router = new OpenAPIHono<ManagementEnv>();
  const schemas = schemasOf(at);
  const { path, noun, deprecated } = at;
  const tags = [at.tag];
  const render = (c: ManagementContext, record: BotUserRecord): z.output<typeof schemas.user> => ({
    id: record.id,
    uri: `${requestOrigin(c)}${path}/${record.id}`,
    name: record.name,
    active: record.active,
    created_at: record.created_at,
  });
  const notFound = (id: string) => new ServiceError(404, ErrorCode.notFound, `No ${noun} '${id}' exists in this account.`, { details: { id } });
  /** The path id, or 404 when it cannot be a user id (so it cannot exist). */
  const userId = (c: ManagementContext): string => {
    const id = c.req.param("id") ?? "";
    if (!isId(id, BOT_USER_ID_PREFIX)) throw notFound(id);
    return id;
  };
  const store = (c: ManagementContext) => accountStore(c.env, c.get("accountId"));

  operation(
    router,
    createRoute({
      method: "post",
      path,
      summary: `Create a ${noun}`,
      tags,
      deprecated,
      request: { body: { required: true, ...json(schemas.create) } },
      responses: { 201: { description: "Created.", ...json(schemas.user) }, ...errorResponses(415) },
    }),
    async (c) => {
      const input = await readJsonBody(c, schemas.create);
      return c.json(render(c, await store(c).createBotUser(input)), 201);
    },
  );

  operation(
    router,
    createRoute({
      method: "get",
      path,
      summary: `List ${noun}s, newest first`,
      tags,
      deprecated,
      request: { query: pageQuerySchema },
      responses: { 200: { description: `A page of ${noun}s.`, ...json(schemas.list) }, ...errorResponses() },
    }),
    async (c) => {
      const request = parsePageRequest(new URL(c.req.url), BOT_USER_ID_PREFIX);
      const page = await store(c).listBotUsers(request);
      const links = pageLinks(`${requestOrigin(c)}${path}`, request, page);
      return c.json({ [at.listKey]: page.items.map((record) => render(c, record)), ...links }, 200);
    },
  );

  operation(
    router,
    createRoute({
      method: "get",
      path: `${path}/{id}`,
      summary: `Get a ${noun}`,
      tags,
      deprecated,
      request: { params: idParams },
      responses: { 200: { description: `The ${noun}.`, ...json(schemas.user) }, ...errorResponses(404) },
    }),
    async (c) => {
      const id = userId(c);
      const record = await store(c).getBotUser(id);
      if (!record) throw notFound(id);
      return c.json(render(c, record), 200);
    },
  );

  operation(
    router,
    createRoute({
      method: "patch",
      path: `${path}/{id}`,
      summary: `Update a ${noun}'s name and/or active flag`,
      tags,
      deprecated,
      request: { params: idParams, body: { required: true, ...json(schemas.update) } },
      responses: { 200: { description: `The updated ${noun}.`, ...json(schemas.user) }, ...errorResponses(404, 415) },
    }),
    async (c) => {
      const id = userId(c);
      const { id: bodyId, ...patch } = await readJsonBody(c, schemas.update);
      if (bodyId !== undefined && bodyId !== id) {
        throw new ServiceError(400, ErrorCode.invalidValue, `The field 'id' must equal the ${noun} id of the path.`, { details: { field: "id" } });
      }
      const record = await store(c).updateBotUser(id, patch);
      if (!record) throw notFound(id);
      return c.json(render(c, record), 200);
    },
  );

  operation(
    router,
    createRoute({
      method: "delete",
      path: `${path}/{id}`,
      summary: `Delete a ${noun}`,
      tags,
      deprecated,
      request: { params: idParams },
      responses: { 204: { description: "Deleted; no body." }, ...errorResponses(404) },
    }),
    async (c) => {
      const id = userId(c);
      if (!(await store(c).deleteBotUser(id))) throw notFound(id);
      return c.body(null, 204);
    },
  );
  return router;
}

export const serviceUsersRouter = usersRouter(SERVICE_USERS);
export const botUsersRouter = usersRouter(BOT_USERS);
