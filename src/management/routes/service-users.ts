/** `/bot_users`: create, get, list (paginated, newest first), update, delete. */

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

const nameSchema = text({ length: { min: 1, max: MAX_NAME_LENGTH } }).openapi({
  description: `Human-readable name of the bot, 1 … ${MAX_NAME_LENGTH} characters (Unicode code points; an emoji is one).`,
  example: "deploy-bot",
});

const activeSchema = z.boolean({ error: "must be true or false" }).openapi({ description: "Whether the bot is active." });

export const botUserSchema = z
  .object({
    id: z.string().openapi({ example: "bot_2abcdefghijklmnopqrstuvwxyz" }),
    uri: uriSchema("Absolute URL of this bot user."),
    name: z.string(),
    active: z.boolean(),
    created_at: timestampSchema,
  })
  .openapi("BotUser");

export const botUserCreateSchema = z
  .strictObject({ name: nameSchema, active: activeSchema.default(true).openapi({ description: "Default `true`." }) })
  .openapi("BotUserCreate");

export const botUserUpdateSchema = z
  .strictObject({
    id: text().optional().openapi({ description: "Tolerated for clients that send it; must equal the path id." }),
    name: nameSchema.optional(),
    active: activeSchema.optional(),
  })
  .openapi("BotUserUpdate");

export const botUserListSchema = z
  .object({
    bot_users: z.array(botUserSchema),
    uri: uriSchema("Absolute URL of the list."),
    next_page_uri: uriSchema("Absolute URL of the next page, or null on the last page.").nullable(),
  })
  .openapi("BotUserList");

const idParams = z.object({ id: text().openapi({ param: { name: "id", in: "path" } }) });
const json = <S extends z.ZodType>(schema: S) => ({ content: { "application/json": { schema } } });

function render(c: ManagementContext, record: BotUserRecord): z.output<typeof botUserSchema> {
  return { id: record.id, uri: `${requestOrigin(c)}/bot_users/${record.id}`, name: record.name, active: record.active, created_at: record.created_at };
}

function notFound(id: string): ServiceError {
  return new ServiceError(404, ErrorCode.notFound, `No bot user '${id}' exists in this account.`, { id });
}

/** The path id, or 404 when it cannot be a bot user id (so it cannot exist). */
function botUserId(c: ManagementContext): string {
  const id = c.req.param("id") ?? "";
  if (!isId(id, BOT_USER_ID_PREFIX)) throw notFound(id);
  return id;
}

export const botUsersRouter = new OpenAPIHono<ManagementEnv>();

operation(
  botUsersRouter,
  createRoute({
    method: "post",
    path: "/bot_users",
    summary: "Create a bot user",
    tags: ["Bot users"],
    request: { body: { required: true, ...json(botUserCreateSchema) } },
    responses: { 201: { description: "Created.", ...json(botUserSchema) }, ...errorResponses(415) },
  }),
  async (c) => {
    const input = await readJsonBody(c, botUserCreateSchema);
    const record = await accountStore(c.env, c.get("accountId")).createBotUser(input);
    return c.json(render(c, record), 201);
  },
);

operation(
  botUsersRouter,
  createRoute({
    method: "get",
    path: "/bot_users",
    summary: "List bot users, newest first",
    tags: ["Bot users"],
    request: { query: pageQuerySchema },
    responses: { 200: { description: "A page of bot users.", ...json(botUserListSchema) }, ...errorResponses() },
  }),
  async (c) => {
    const request = parsePageRequest(new URL(c.req.url), BOT_USER_ID_PREFIX);
    const page = await accountStore(c.env, c.get("accountId")).listBotUsers(request);
    const links = pageLinks(`${requestOrigin(c)}/bot_users`, request, page);
    return c.json({ bot_users: page.items.map((record) => render(c, record)), ...links }, 200);
  },
);

operation(
  botUsersRouter,
  createRoute({
    method: "get",
    path: "/bot_users/{id}",
    summary: "Get a bot user",
    tags: ["Bot users"],
    request: { params: idParams },
    responses: { 200: { description: "The bot user.", ...json(botUserSchema) }, ...errorResponses(404) },
  }),
  async (c) => {
    const id = botUserId(c);
    const record = await accountStore(c.env, c.get("accountId")).getBotUser(id);
    if (!record) throw notFound(id);
    return c.json(render(c, record), 200);
  },
);

operation(
  botUsersRouter,
  createRoute({
    method: "patch",
    path: "/bot_users/{id}",
    summary: "Update a bot user's name and/or active flag",
    tags: ["Bot users"],
    request: { params: idParams, body: { required: true, ...json(botUserUpdateSchema) } },
    responses: { 200: { description: "The updated bot user.", ...json(botUserSchema) }, ...errorResponses(404, 415) },
  }),
  async (c) => {
    const id = botUserId(c);
    const { id: bodyId, ...patch } = await readJsonBody(c, botUserUpdateSchema);
    if (bodyId !== undefined && bodyId !== id) {
      throw new ServiceError(400, ErrorCode.invalidValue, "The field 'id' must equal the bot user id of the path.", { field: "id" });
    }
    const record = await accountStore(c.env, c.get("accountId")).updateBotUser(id, patch);
    if (!record) throw notFound(id);
    return c.json(render(c, record), 200);
  },
);

operation(
  botUsersRouter,
  createRoute({
    method: "delete",
    path: "/bot_users/{id}",
    summary: "Delete a bot user",
    tags: ["Bot users"],
    request: { params: idParams },
    responses: { 204: { description: "Deleted; no body." }, ...errorResponses(404) },
  }),
  async (c) => {
    const id = botUserId(c);
    const deleted = await accountStore(c.env, c.get("accountId")).deleteBotUser(id);
    if (!deleted) throw notFound(id);
    return c.body(null, 204);
  },
);
