/**
 * The public request as the edge relays it: what EdgeStreams is given, and the request head the agent gets
 * from it (the public Host, the client's own Accept-Encoding, no hop-by-hop headers).
 */

import { HOP_BY_HOP_HEADERS } from "../relay/http-semantics.ts";
import type { CarriedRateLimit } from "../relay/edge-decision.ts";
import { encodeFrame } from "../relay/frame-codec.ts";
import type { FrameOf } from "../relay/frames.ts";
import { checkRequestHead, type HeadRefusal } from "../relay/head-bounds.ts";

export interface RelayRequest {
  readonly tunnelId: string;
  readonly method: string;
  /** Path and query. */
  readonly target: string;
  readonly headers: Headers;
  readonly clientAddr: string;
  readonly scheme: string;
  /** The public host (sent as the Host header, and named in error messages). */
  readonly host: string;
  readonly body: ReadableStream<Uint8Array> | null;
  /** The public client asks for a WebSocket. */
  readonly upgrade?: boolean;
  /** The rate limits the tunnel's policy counted the request against, for the agent's inspector. */
  readonly decisions?: readonly CarriedRateLimit[];
}

/**
 * Carries the public client's own `Accept-Encoding` from the Worker to the session object: "" when it sent
 * none, absent when the platform did not replace it. The relay subrequest keeps the platform's header and
 * only the request head the agent gets has the client's: with the header removed from the subrequest,
 * bench:tunnel's downloads through a tunnel ran at less than half their speed (figures: docs/benchmark.md#figures-behind-constants-in-the-code).
 */
export const CLIENT_ACCEPT_ENCODING_HEADER = "x-tollgate-client-accept-encoding";

/**
 * The relay subrequest's headers: the client's, with what the platform replaced marked for `open`.
 * Cloudflare sets every incoming request's `Accept-Encoding` to `br, gzip` before the Worker runs and keeps
 * the client's value in `request.cf.clientAcceptEncoding` ("the original value of the Accept-Encoding header
 * if Cloudflare modified it"); Miniflare under `wrangler dev` does the same, with "" when the client sent
 * none. Absent, the header is the client's own. A marker the client sent itself is dropped.
 */
export function clientRequestHeaders(headers: Headers, cf: unknown): Headers {
  const original = (cf as { clientAcceptEncoding?: unknown } | undefined)?.clientAcceptEncoding;
  if (typeof original !== "string" && !headers.has(CLIENT_ACCEPT_ENCODING_HEADER)) return headers;
  const marked = new Headers(headers);
  if (typeof original === "string") marked.set(CLIENT_ACCEPT_ENCODING_HEADER, original);
  else marked.delete(CLIENT_ACCEPT_ENCODING_HEADER);
  return marked;
}

/** The request head of stream `id`. The public Host travels in it: a subrequest to the session object carries the object's own host. */
export function requestHead(id: number, request: RelayRequest): FrameOf<"request_head"> {
  const headers: Array<[string, string]> = [["host", request.host]];
  const clientAcceptEncoding = request.headers.get(CLIENT_ACCEPT_ENCODING_HEADER);
  request.headers.forEach((value, name) => {
    if (name === "host" || name === CLIENT_ACCEPT_ENCODING_HEADER || HOP_BY_HOP_HEADERS.has(name)) return;
    if (name === "accept-encoding" && clientAcceptEncoding !== null) {
      if (clientAcceptEncoding !== "") headers.push([name, clientAcceptEncoding]);
      return;
    }
    headers.push([name, value]);
  });
  if (clientAcceptEncoding && !request.headers.has("accept-encoding")) headers.push(["accept-encoding", clientAcceptEncoding]);
  return {
    type: "request_head",
    stream: id,
    tunnel_id: request.tunnelId,
    method: request.method,
    target: request.target,
    headers,
    client_addr: request.clientAddr,
    scheme: request.scheme,
    ...(request.upgrade ? { upgrade: "websocket" as const } : {}),
    ...(request.decisions ? { decisions: [...request.decisions] } : {}),
  };
}

/**
 * The request head of stream `id` encoded, or why the agent would refuse it (head-bounds.ts), counted after the
 * edge added its own fields: what EdgeStreams sends, or answers itself instead.
 */
export function encodeRequestHead(id: number, request: RelayRequest): { readonly ok: true; readonly encoded: Uint8Array } | HeadRefusal {
  const head = requestHead(id, request);
  const encoded = encodeFrame(head);
  const verdict = checkRequestHead(head, encoded.byteLength);
  return verdict.ok ? { ok: true, encoded } : verdict;
}
