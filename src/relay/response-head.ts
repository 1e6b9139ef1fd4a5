/**
 * Which response heads the edge takes from the agent for a request: one per stream, a 101 only for a
 * WebSocket upgrade, no interim heads, and a body channel only for a body of valid, allowed length.
 */

import type { FrameOf } from "./frames.ts";
import { contentLengthOf, responseHasNoBody } from "./http-semantics.ts";
import { ResetCode } from "./protocol.ts";
import type { StreamFailure } from "./stream-table.ts";

/** A head taken: `channelLength` is the body its channel announces (undefined: the body comes in frames, if any). */
export type HeadVerdict = { readonly ok: true; readonly channelLength?: number } | ({ readonly ok: false } & StreamFailure);

const refuse = (code: string, message: string): HeadVerdict => ({ ok: false, code, message });

export function checkResponseHead(
  head: FrameOf<"response_head">,
  request: { readonly method: string; readonly upgrade?: boolean; readonly headSeen: boolean },
  maxChannelBytes: number,
): HeadVerdict {
  if (request.headSeen) return refuse(ResetCode.protocolError, "a second response head");
  // A 101 is the answer to a WebSocket upgrade only; anywhere else the public client gets a clear 502.
  if (head.status === 101 && !request.upgrade) return refuse(ResetCode.upstreamError, "the local service switched protocols unasked");
  // an interim response is the agent's to consume; a final one answers the client (the runtime refuses 1xx)
  if (head.status < 200 && head.status !== 101) return refuse(ResetCode.protocolError, `an interim response head (${head.status}) for the public client`);
  if (!head.body_channel) return { ok: true };
  if (responseHasNoBody(head.status, request.method) || request.upgrade)
    return refuse(ResetCode.protocolError, "a body channel for a response that has no body");
  const length = contentLengthOf(head.headers);
  if (length === undefined) return refuse(ResetCode.protocolError, "a body channel for a response without a valid content-length");
  if (length > maxChannelBytes) return refuse(ResetCode.protocolError, `a body channel for ${length} bytes, more than the ${maxChannelBytes} welcome allowed`);
  return { ok: true, channelLength: length };
}
