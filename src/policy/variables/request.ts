/**
 * `req.*`: method, host, the URL as a string (its parts are in url.ts), headers, content length and the
 * User-Agent header (its parsed parts are in user-agent.ts). Built with every bindings snapshot, so each is
 * cheap: the header map is built once per Headers object (header-map.ts).
 */

import { INT, record, refused, STRING, STRING_LIST_MAP } from "../cel-types.ts";
import type { Exchange } from "../exchange.ts";
import { COOKIES } from "./cookies.ts";
import type { VariableFamily } from "./family.ts";

/** Digits of a Content-Length value read as `req.content_length` (16 digits pass any real body size). */
export const MAX_CONTENT_LENGTH_DIGITS = 16;
const CONTENT_LENGTH = new RegExp(`^\\d{1,${MAX_CONTENT_LENGTH_DIGITS}}$`);

const unavailable = (name: string, why: string) => refused(`${name} is not available on Workers: ${why}`);

export const REQ = record("req", {
  method: STRING,
  host: STRING,
  url: STRING,
  headers: STRING_LIST_MAP,
  content_length: INT,
  user_agent: STRING,
  cookies: COOKIES,
  trailers: unavailable("req.trailers", "a Worker never sees request trailers"),
  ts: unavailable("req.ts", "a Worker sees the request once its header arrived, not when"),
});

/** `map`: the request's header map, (header-map.ts). */
export function requestVariable(exchange: Exchange, headers: ReadonlyMap<string, readonly string[]>): Map<string, unknown> {
  const { request } = exchange;
  const req = new Map<string, unknown>([
    ["method", request.method],
    ["host", request.host],
    ["url", request.url.href],
    ["headers", headers],
    ["user_agent", headers.get("user-agent")?.[0] ?? ""],
  ]);
  // As ngrok: absent when the request names no length (a streamed body, no body); has() tells.
  const length = headers.get("content-length")?.[0]?.trim();
  if (length !== undefined && CONTENT_LENGTH.test(length)) req.set("content_length", BigInt(length));
  return req;
}

/** Read in catalog.ts, beside `res`: both take a header map (header-map.ts). */
export const requestVariables: VariableFamily = { types: { req: REQ }, readers: {} };
