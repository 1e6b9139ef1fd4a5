/** List pagination: `limit` (1 … 100, default 100), `before_id` (alias `beforeId`), `next_page_uri`. */

import { z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../errors.ts";
import { isId } from "../ids.ts";
import { validationError } from "./body.ts";
import { text } from "./text.ts";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 100;

export interface PageRequest {
  readonly limit: number;
  /** Only items with an id lower than this (that is, created earlier) are listed. */
  readonly beforeId?: string;
}

export interface Page<T> {
  readonly items: T[];
  /** True when items older than the last one exist. */
  readonly hasMore: boolean;
}

const LIMIT_MESSAGE = `must be an integer from 1 to ${MAX_PAGE_SIZE}`;

/** The query parameters of every list, as documented; unknown parameters are ignored. */
export const pageQuerySchema = z.object({
  limit: text()
    .regex(/^[0-9]+$/, LIMIT_MESSAGE)
    .optional()
    .openapi({ description: `Page size, 1 … ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.`, example: "100" }),
  before_id: text().optional().openapi({ description: "Lists the items created before this id: the last id of the previous page." }),
  beforeId: text().optional().openapi({ description: "Alias of `before_id` (the ngrok API clients send it)." }),
});

/** Which ids a list's `before_id` may name, when they are not this API's generated ids. */
export interface ListedIds {
  test(id: string): boolean;
  /** How the error message describes them. */
  readonly form: string;
}

/**
 * Reads `limit` and `before_id`/`beforeId`; ids of other resources are refused (400 ERR_SVC_215). Ids are
 * those generated with `idPrefix`, unless `listed` says otherwise.
 */
export function parsePageRequest(url: URL, idPrefix: string, listed?: ListedIds): PageRequest {
  const query = Object.fromEntries(url.searchParams);
  const parsed = pageQuerySchema.safeParse(query);
  if (!parsed.success) {
    if (parsed.error.issues[0].path[0] === "limit") throw limitError();
    throw validationError(parsed.error);
  }
  const { limit: limitText, before_id: snake, beforeId: camel } = parsed.data;
  const limit = limitText === undefined ? DEFAULT_PAGE_SIZE : Number(limitText);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) throw limitError();

  if (snake !== undefined && camel !== undefined && snake !== camel) {
    throw new ServiceError(400, ErrorCode.invalidValue, "The query parameters 'before_id' and 'beforeId' disagree; send one of them.", {
      details: {
        field: "before_id",
      },
    });
  }
  const beforeId = snake ?? camel;
  const accepted = listed ? listed.test(beforeId ?? "") : isId(beforeId ?? "", idPrefix);
  if (beforeId !== undefined && !accepted) {
    const form = listed ? listed.form : `an id of the form '${idPrefix}_…'`;
    throw new ServiceError(400, ErrorCode.invalidValue, `The field 'before_id' must be ${form}.`, { details: { field: "before_id" } });
  }
  return { limit, beforeId };
}

function limitError(): ServiceError {
  return new ServiceError(400, ErrorCode.pageSizeOutOfRange, `The field 'limit' ${LIMIT_MESSAGE}.`, {
    details: {
      field: "limit",
      min: 1,
      max: MAX_PAGE_SIZE,
    },
  });
}

/** One page of a list that is already in memory (`items` newest first, that is by id descending). */
export function pageOf<T extends { id: string }>(items: readonly T[], request: PageRequest): Page<T> {
  const sorted = [...items].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const start = request.beforeId === undefined ? 0 : sorted.findIndex((item) => item.id < request.beforeId!);
  const rest = start < 0 ? [] : sorted.slice(start);
  return { items: rest.slice(0, request.limit), hasMore: rest.length > request.limit };
}

/** `uri` and `next_page_uri` of a page: absolute, the next one carrying `before_id` and `limit`, or null. */
export function pageLinks(listUri: string, request: PageRequest, page: Page<{ id: string }>): { uri: string; next_page_uri: string | null } {
  const last = page.items.at(-1);
  if (!page.hasMore || last === undefined) return { uri: listUri, next_page_uri: null };
  const next = new URL(listUri);
  next.searchParams.set("before_id", last.id);
  next.searchParams.set("limit", String(request.limit));
  return { uri: listUri, next_page_uri: next.toString() };
}
