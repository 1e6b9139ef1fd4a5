/**
 * What HTTP (and WebSocket) say about a relayed exchange, whichever end reads it: headers that belong to one
 * hop, statuses and methods whose responses have no body, a content-length's value, close codes an endpoint
 * may send, and the X-Forwarded-* headers the local service gets.
 */

import type { FrameOf } from "./frames.ts";

/** Headers that describe one hop and are never relayed. */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Statuses whose responses have no body, whatever their headers say. */
export const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 204, 205, 304]);

/** A response of `status` to a `method` request has no body (a HEAD's, a 204's, …), whatever its headers say. */
export function responseHasNoBody(status: number, method: string): boolean {
  return NULL_BODY_STATUSES.has(status) || method.toUpperCase() === "HEAD";
}

/** A content-length header's value as a byte count: 1–15 digits (surrounding spaces allowed), else undefined. */
export function parseContentLength(value: string | null | undefined): number | undefined {
  const trimmed = value?.trim();
  return trimmed !== undefined && /^\d{1,15}$/.test(trimmed) ? Number(trimmed) : undefined;
}

/** The content-length of a header list (names in any case), when it has a valid one. */
export function contentLengthOf(headers: ReadonlyArray<readonly [string, string]>): number | undefined {
  return parseContentLength(headers.find(([name]) => name.toLowerCase() === "content-length")?.[1]);
}

/** The header pairs of a flat [name, value, name, value, …] list that are not hop-by-hop, in order. */
export function endToEndHeaders(flat: readonly string[]): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) if (!HOP_BY_HOP_HEADERS.has(flat[i].toLowerCase())) headers.push([flat[i], flat[i + 1]]);
  return headers;
}

/** WebSocket close codes an endpoint may send (1005, 1006 and 1015 only describe what happened); others become 1000. */
export function sendableCloseCode(code: number): number {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1000;
}

/** The request headers the local service gets: the public client's, plus X-Forwarded-For/-Proto/-Host. */
export function forwardedRequestHeaders(head: Pick<FrameOf<"request_head">, "headers" | "client_addr" | "scheme">): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  let host = "";
  let forwardedFor: string | undefined;
  for (const [name, value] of head.headers) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP_HEADERS.has(lower)) continue;
    if (lower === "host") host = value;
    if (lower === "x-forwarded-for") {
      forwardedFor = forwardedFor ? `${forwardedFor}, ${value}` : value;
      continue;
    }
    // the edge answered any `Expect: 100-continue` already; the body is on its way
    if (lower === "x-forwarded-proto" || lower === "x-forwarded-host" || lower === "expect") continue;
    headers.push([name, value]);
  }
  if (head.client_addr) {
    const last = forwardedFor?.split(",").at(-1)?.trim();
    forwardedFor = !forwardedFor ? head.client_addr : last === head.client_addr ? forwardedFor : `${forwardedFor}, ${head.client_addr}`;
  }
  if (forwardedFor) headers.push(["x-forwarded-for", forwardedFor]);
  headers.push(["x-forwarded-proto", head.scheme]);
  if (host) headers.push(["x-forwarded-host", host]);
  return headers;
}
