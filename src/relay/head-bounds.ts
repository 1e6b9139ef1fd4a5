/**
 * The bounds of a relayed request head, one definition for both ends: the agent's decoder holds every frame to
 * them (frames.ts), and the edge checks the head it built against them before relaying it, answering 431, 414
 * or 501 itself instead of sending a frame the agent would refuse (which once closed the agent's whole session).
 */

import { MAX_WS_MESSAGE } from "./protocol.ts";

/** Characters of a request method (the longest registered one, UPDATEREDIRECTREF, has 17). */
export const MAX_METHOD_CHARS = 32;
/** Characters of a request target, path and query (Cloudflare's own URL bound is 16 KB too). */
export const MAX_TARGET_CHARS = 16 * 1024;
/** Characters of a header name, in request and response heads. */
export const MAX_HEADER_NAME_CHARS = 256;
/** Characters of one header value (a repeated header counts as the one value its copies are joined into). */
export const MAX_HEADER_VALUE_CHARS = 16 * 1024;
/** Header fields of a head, those the edge adds (Host, the client's Accept-Encoding) included. */
export const MAX_HEADER_FIELDS = 512;
/** Characters of a response head's status text (the agent cuts a longer reason phrase). */
export const MAX_STATUS_TEXT_CHARS = 256;
/** Characters of the client address the edge sends (an IPv6 address has at most 45). */
export const MAX_CLIENT_ADDR_CHARS = 64;
/** Characters of the scheme ("http" or "https"). */
export const MAX_SCHEME_CHARS = 8;
/** Bytes of a whole request_head frame, its 10-byte header included: one WebSocket message workerd takes. */
export const MAX_REQUEST_HEAD_BYTES = MAX_WS_MESSAGE;

/** What the edge answers a head past a bound with: the field's status and the bound it broke, in words. */
export type HeadVerdict = { readonly ok: true } | { readonly ok: false; readonly status: 400 | 414 | 431 | 501; readonly reason: string };

export type HeadRefusal = Extract<HeadVerdict, { ok: false }>;

const OK: HeadVerdict = { ok: true };
const refuse = (status: 400 | 414 | 431 | 501, reason: string): HeadVerdict => ({ ok: false, status, reason });

/** Header names in a reason are cut (they are the client's text). */
const shown = (name: string) => JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);

/** Why a header list breaks the bounds (count, a name, a value), in words, or undefined when it keeps to them. */
export function headerListProblem(headers: readonly (readonly [unknown, unknown])[]): string | undefined {
  if (headers.length > MAX_HEADER_FIELDS) return `it has ${headers.length} header fields, more than ${MAX_HEADER_FIELDS}`;
  for (const [name, value] of headers) {
    if (typeof name !== "string" || name.length === 0) return "a header field has no name";
    if (name.length > MAX_HEADER_NAME_CHARS) return `a header name has ${name.length} characters, more than ${MAX_HEADER_NAME_CHARS}`;
    if (typeof value !== "string") return `header ${shown(name)} has no text value`;
    if (value.length > MAX_HEADER_VALUE_CHARS) return `header ${shown(name)} has a value of ${value.length} characters, more than ${MAX_HEADER_VALUE_CHARS}`;
  }
  return undefined;
}

/** The fields of a request head the bounds speak of (a request_head frame has them; frames.ts takes its numbers from here). */
export interface RequestHeadFields {
  readonly tunnel_id: string;
  readonly method: string;
  readonly target: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly client_addr: string;
  readonly scheme: string;
  readonly upgrade?: string;
}

/**
 * Whether the agent takes `head`, encoded in `frameBytes` bytes (the whole frame). Its carried `decisions` are
 * not looked at: the edge reads them with their schema where they enter (session-decisions.ts carriedDecisionsOf).
 * 431 for header fields (a name, a value, their count, the whole head's size; the client address comes from a
 * header), 414 for the target, 501 for a method no server implements, 400 for what no client can cause.
 */
export function checkRequestHead(head: RequestHeadFields, frameBytes: number): HeadVerdict {
  const { method, target } = head;
  if (typeof method !== "string" || method.length === 0) return refuse(400, "its method is empty");
  if (method.length > MAX_METHOD_CHARS) return refuse(501, `its method has ${method.length} characters, more than ${MAX_METHOD_CHARS}`);
  if (typeof target !== "string" || target.length === 0) return refuse(400, "its target is empty");
  if (target.length > MAX_TARGET_CHARS) return refuse(414, `its target has ${target.length} characters, more than ${MAX_TARGET_CHARS}`);
  const headers = Array.isArray(head.headers) ? headerListProblem(head.headers) : "it has no header list";
  if (headers) return refuse(431, headers);
  if (typeof head.client_addr !== "string" || head.client_addr.length > MAX_CLIENT_ADDR_CHARS)
    return refuse(431, `its client address has ${String(head.client_addr).length} characters, more than ${MAX_CLIENT_ADDR_CHARS}`);
  if (typeof head.scheme !== "string" || head.scheme.length > MAX_SCHEME_CHARS) return refuse(400, `its scheme has more than ${MAX_SCHEME_CHARS} characters`);
  if (typeof head.tunnel_id !== "string") return refuse(400, "it names no tunnel");
  if (head.upgrade !== undefined && head.upgrade !== "websocket") return refuse(400, "it asks for an upgrade other than websocket");
  if (frameBytes > MAX_REQUEST_HEAD_BYTES) return refuse(431, `its head takes ${frameBytes} bytes, more than ${MAX_REQUEST_HEAD_BYTES}`);
  return OK;
}
