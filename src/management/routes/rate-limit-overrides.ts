/**
 * `/rate_limit_overrides`: limits set for one bucket key (or a `*` pattern of them) of a `rate-limit` action on a
 * route or of an online tunnel's policy (override-targets.ts), applied by the gateway instead of the action's own
 * within a second (src/limiter/override-cache.ts).
 * Create, list (paginated, newest first), get, update, delete; each account sees only its own.
 */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { isId } from "../../ids.ts";
import { capacitySchema, type WindowDocument, windowsSchema } from "../../policy/actions/rate-limit-windows.ts";
import { accountStore } from "../account-store.ts";
import { readJsonObject, validate } from "../body.ts";
import { requestOrigin, type ManagementContext, type ManagementEnv } from "../context.ts";
import { errorResponses, operation } from "../operation.ts";
import { pageLinks, pageQuerySchema, parsePageRequest } from "../pagination.ts";
import { timestampSchema, uriSchema } from "../schemas.ts";
import { text } from "../text.ts";
import { scopeOfTarget, targetFields, targetOfScope, targetSchemaFields } from "./override-targets.ts";
import { OVERRIDE_ID_PREFIX, type OverrideRecord, type OverrideRefusal } from "../store/rate-limit-overrides.ts";

/** Bounds of one override (docs/security.md): key or pattern, its stars, the description, the expiry. */
export const MAX_BUCKET_KEY_LENGTH = 1_024;
export const MAX_PATTERN_STARS = 16;
export const MAX_DESCRIPTION_LENGTH = 1_024;
export const MAX_ACTION_NAME_LENGTH = 1_023;
export const MAX_EXPIRY_MS = 366 * 24 * 3_600_000;

const PATH = "/rate_limit_overrides";
const tags = ["Rate-limit overrides"];
const json = <S extends z.ZodType>(schema: S) => ({ content: { "application/json": { schema } } });
const idParams = z.object({ id: text().openapi({ param: { name: "id", in: "path" } }) });

const bucketKey = text({ length: { min: 1, max: MAX_BUCKET_KEY_LENGTH } })
  .refine((key) => key.split("*").length - 1 <= MAX_PATTERN_STARS, { message: `must hold at most ${MAX_PATTERN_STARS} '*'` })
  .openapi({
    description: `The bucket key value as actions.svc.rate_limit.bucket_key shows it (elements joined with ':'), or a pattern in which '*' matches any run of characters; 1 … ${MAX_BUCKET_KEY_LENGTH} characters, at most ${MAX_PATTERN_STARS} '*'.`,
    example: "cust-42",
  });
const expiresAt = text().openapi({ format: "date-time", description: "RFC 3339; the override stops applying at this time. At most 366 days ahead." });
const description = text({ length: { min: 0, max: MAX_DESCRIPTION_LENGTH } }).openapi({
  description: `Free text, at most ${MAX_DESCRIPTION_LENGTH} characters.`,
});
const limitFields = {
  capacity: z.unknown().optional().openapi({ type: "integer", description: "With `rate`: one sliding window (the action's seed form)." }),
  rate: z.unknown().optional().openapi({ type: "string", description: "With `capacity`: the window's length, whole seconds from 1s to 744h.", example: "60s" }),
  windows: z.unknown().optional().openapi({ type: "array", description: "Instead of capacity + rate: the windows, as the action's `windows`." }),
};

const createSchema = z
  .strictObject({
    ...targetFields,
    action: text({ length: { min: 1, max: MAX_ACTION_NAME_LENGTH } }).openapi({ description: "The `name` of the rate-limit action." }),
    bucket_key: bucketKey,
    ...limitFields,
    expires_at: expiresAt.nullable().optional(),
    description: description.optional(),
  })
  .openapi("RateLimitOverrideCreate");

const updateSchema = z
  .strictObject({ id: text().optional(), ...limitFields, expires_at: expiresAt.nullable().optional(), description: description.optional() })
  .openapi("RateLimitOverrideUpdate");

const overrideSchema = z
  .object({
    id: z.string().openapi({ example: "rlo_2abcdefghijklmnopqrstuvwxyz" }),
    uri: uriSchema("Absolute URL of this override."),
    ...targetSchemaFields,
    action: z.string(),
    bucket_key: z.string(),
    match: z.enum(["exact", "pattern"]).openapi({ description: "`pattern` when bucket_key holds '*'." }),
    windows: z.array(z.record(z.string(), z.unknown())),
    expires_at: timestampSchema.nullable(),
    description: z.string(),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .openapi("RateLimitOverride");

const listSchema = z
  .object({
    rate_limit_overrides: z.array(overrideSchema),
    uri: uriSchema("Absolute URL of the list."),
    next_page_uri: uriSchema("Absolute URL of the next page, or null on the last page.").nullable(),
  })
  .openapi("RateLimitOverrideList");

function invalid(field: string, message: string): ServiceError {
  return new ServiceError(400, ErrorCode.invalidValue, `The field '${field}' ${message}.`, { details: { field } });
}

/** The windows a body gives: `windows`, or `capacity` + `rate` as a list of one; undefined when it gives none. */
function windowsOf(body: { capacity?: unknown; rate?: unknown; windows?: unknown }, required: boolean): WindowDocument[] | undefined {
  const { capacity, rate, windows } = body;
  if (windows !== undefined) {
    if (capacity !== undefined || rate !== undefined) throw invalid(capacity !== undefined ? "capacity" : "rate", "cannot be combined with windows");
    return validate(windowsSchema, windows, ["windows"]);
  }
  if (capacity === undefined && rate === undefined && !required) return undefined;
  if (capacity === undefined) throw invalid("capacity", "is required (or give windows)");
  if (rate === undefined) throw invalid("rate", "is required (or give windows)");
  const checkedCapacity = validate(capacitySchema, capacity, ["capacity"]);
  const parsed = windowsSchema.safeParse([{ capacity: checkedCapacity, rate }]);
  if (!parsed.success) throw invalid("rate", parsed.error.issues[0]?.message ?? "is not a window length");
  return parsed.data;
}

/** `expires_at` as epoch ms (null: never); it must lie in the future and at most MAX_EXPIRY_MS ahead. */
function expiryOf(value: string | null | undefined, now: number): number | null | undefined {
  if (value === undefined || value === null) return value;
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalid("expires_at", "must be an RFC 3339 date-time such as 2026-05-01T12:00:00Z");
  if (ms <= now) throw invalid("expires_at", "must be in the future");
  if (ms - now > MAX_EXPIRY_MS) throw invalid("expires_at", "must be at most 366 days ahead");
  return ms;
}

function render(c: ManagementContext, record: OverrideRecord): z.output<typeof overrideSchema> {
  return {
    id: record.id,
    uri: `${requestOrigin(c)}${PATH}/${record.id}`,
    ...targetOfScope(record.scope),
    action: record.action,
    bucket_key: record.bucket_key,
    match: record.bucket_key.includes("*") ? "pattern" : "exact",
    windows: record.windows as unknown as Record<string, unknown>[],
    expires_at: record.expires_ms === null ? null : new Date(record.expires_ms).toISOString().replace(/\.\d{3}Z$/, "Z"),
    description: record.description,
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

const notFound = (id: string) => new ServiceError(404, ErrorCode.notFound, `No rate-limit override '${id}' exists in this account.`, { details: { id } });

/** The path id, or 404 when it cannot be an override id (so it cannot exist). */
function overrideId(c: ManagementContext): string {
  const id = c.req.param("id") ?? "";
  if (!isId(id, OVERRIDE_ID_PREFIX)) throw notFound(id);
  return id;
}

function refusal(answer: OverrideRecord | OverrideRefusal): OverrideRecord {
  if ("refused" in answer) throw new ServiceError(400, ErrorCode.invalidValue, answer.refused, { details: { field: answer.field } });
  return answer;
}

const store = (c: ManagementContext) => accountStore(c.env, c.get("accountId"));

export const rateLimitOverridesRouter = new OpenAPIHono<ManagementEnv>();

operation(
  rateLimitOverridesRouter,
  createRoute({
    method: "post",
    path: PATH,
    summary: "Override the limits of one bucket key (or pattern) of a rate-limit action on a route or a tunnel",
    tags,
    request: { body: { required: true, ...json(createSchema) } },
    responses: { 201: { description: "Created; applied to live traffic within a second.", ...json(overrideSchema) }, ...errorResponses(404, 415) },
  }),
  async (c) => {
    const body = validate(createSchema, await readJsonObject(c));
    const windows = windowsOf(body, true)!;
    const expires = expiryOf(body.expires_at, Date.now()) ?? null;
    const scope = await scopeOfTarget(c.env, c.get("accountId"), c.get("edges"), c.get("tunnels"), body);
    const created = await store(c).createOverride({
      scope,
      action: body.action,
      bucket_key: body.bucket_key,
      windows,
      expires_ms: expires,
      description: body.description ?? "",
    });
    return c.json(render(c, refusal(created)), 201);
  },
);

operation(
  rateLimitOverridesRouter,
  createRoute({
    method: "get",
    path: PATH,
    summary: "List rate-limit overrides, newest first",
    tags,
    request: { query: pageQuerySchema },
    responses: { 200: { description: "A page of overrides.", ...json(listSchema) }, ...errorResponses() },
  }),
  async (c) => {
    const request = parsePageRequest(new URL(c.req.url), OVERRIDE_ID_PREFIX);
    const page = await store(c).listOverrides(request);
    const links = pageLinks(`${requestOrigin(c)}${PATH}`, request, page);
    return c.json({ rate_limit_overrides: page.items.map((record) => render(c, record)), ...links }, 200);
  },
);

operation(
  rateLimitOverridesRouter,
  createRoute({
    method: "get",
    path: `${PATH}/{id}`,
    summary: "Get a rate-limit override",
    tags,
    request: { params: idParams },
    responses: { 200: { description: "The override.", ...json(overrideSchema) }, ...errorResponses(404) },
  }),
  async (c) => {
    const id = overrideId(c);
    const record = await store(c).getOverride(id);
    if (!record) throw notFound(id);
    return c.json(render(c, record), 200);
  },
);

operation(
  rateLimitOverridesRouter,
  createRoute({
    method: "patch",
    path: `${PATH}/{id}`,
    summary: "Change an override's limits, expiry or description",
    description:
      "The target (edge and route or tunnel, action, bucket_key) is fixed: delete and create to move an override. `expires_at: null` removes the expiry.",
    tags,
    request: { params: idParams, body: { required: true, ...json(updateSchema) } },
    responses: { 200: { description: "The updated override.", ...json(overrideSchema) }, ...errorResponses(404, 415) },
  }),
  async (c) => {
    const id = overrideId(c);
    const { id: bodyId, ...body } = validate(updateSchema, await readJsonObject(c));
    if (bodyId !== undefined && bodyId !== id) throw invalid("id", "must equal the override id of the path");
    const windows = windowsOf(body, false);
    const expires = expiryOf(body.expires_at, Date.now());
    const record = await store(c).updateOverride(id, {
      ...(windows ? { windows } : {}),
      ...(expires !== undefined ? { expires_ms: expires } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
    });
    if (!record) throw notFound(id);
    return c.json(render(c, record), 200);
  },
);

operation(
  rateLimitOverridesRouter,
  createRoute({
    method: "delete",
    path: `${PATH}/{id}`,
    summary: "Delete a rate-limit override",
    tags,
    request: { params: idParams },
    responses: { 204: { description: "Deleted; the action's own limits apply again within a second." }, ...errorResponses(404) },
  }),
  async (c) => {
    const id = overrideId(c);
    if (!(await store(c).deleteOverride(id))) throw notFound(id);
    return c.body(null, 204);
  },
);
