/**
 * Body channels at the Worker (protocol.ts, "Body channels"): an agent's POST of a response body is checked
 * for shape and handed to the session object it names. The object checks the token. The object is named by
 * its id, which the platform checks was made by this namespace, so a POST cannot make the Worker create an
 * object: a made-up id is refused here.
 */

import type { Env } from "../env.ts";
import { ServiceError } from "../errors.ts";
import { TunnelErrorCode } from "./errors.ts";
import { MAX_STREAM_ID, parseContentLength } from "../relay/index.ts";

/** The session object's path for a body channel's POST. */
export const BODY_PATH = "/body";
/** The POST's content-length, passed to the object (a streamed subrequest body need not keep it). */
export const BODY_LENGTH_HEADER = "x-tollgate-body-length";
const TOKEN_BYTES = 32;
const TOKEN_PATTERN = /^Bearer ([A-Za-z0-9_-]{43})$/;
const OBJECT_PATTERN = /^[0-9a-f]{64}$/;

/** A session's body-channel token: 32 random bytes, base64url (43 characters). */
export function newBodyToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(TOKEN_BYTES));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** The token of an `Authorization: Bearer …` header, when it has a token's shape. */
export function bearerToken(header: string | null): string | undefined {
  return header === null ? undefined : TOKEN_PATTERN.exec(header)?.[1];
}

/** Compares tokens in time that does not depend on where they differ. */
export function tokensMatch(given: string, expected: string): boolean {
  const encoder = new TextEncoder();
  const a = encoder.encode(given);
  const b = encoder.encode(expected);
  return a.byteLength === b.byteLength && crypto.subtle.timingSafeEqual(a, b);
}

/** Refuses a POST; its unread body is discarded by the runtime. */
function refuse(status: number, message: string): Response {
  return new ServiceError(status, TunnelErrorCode.agentEndpoint, message).toResponse();
}

/** Serves AGENT_BODY_PATH: `POST ?object=<session object id>&stream=<id>`, `Authorization: Bearer <token>`. */
export async function routeBodyChannel(request: Request, env: Env, url: URL): Promise<Response> {
  if (request.method !== "POST") return refuse(405, "Body channels are POSTs from the tunnel agent.");
  const object = url.searchParams.get("object") ?? "";
  const streamParam = url.searchParams.get("stream") ?? "";
  const stream = Number(streamParam);
  if (!OBJECT_PATTERN.test(object)) return refuse(400, "The body channel's `object` must be the 64 hex digits the session's welcome gave.");
  if (!/^\d{1,10}$/.test(streamParam) || stream < 1 || stream > MAX_STREAM_ID) {
    return refuse(400, `The body channel's \`stream\` must be a stream id from 1 to ${MAX_STREAM_ID}.`);
  }
  if (!bearerToken(request.headers.get("authorization"))) return refuse(401, "The body channel needs the session's token as `Authorization: Bearer <token>`.");
  const length = parseContentLength(request.headers.get("content-length"));
  if (length === undefined) return refuse(411, "The body channel's POST needs a content-length: the response body's length.");
  if (!request.body) return refuse(400, "The body channel's POST has no body.");
  let id: DurableObjectId;
  try {
    id = env.TUNNEL_SESSION.idFromString(object);
  } catch {
    return refuse(404, "No tunnel session has that object id.");
  }
  const headers = new Headers({ authorization: request.headers.get("authorization")!, [BODY_LENGTH_HEADER]: String(length) });
  // The body goes through a pipe this handler owns: when the object answers before reading all of it (a
  // refusal), the pipe ends with the object's answer instead of the runtime reading the request after it
  // was answered (an uncaught exception in the Worker for every refusal).
  // A POST that breaks off must reach the object as a failure, never as a shorter body or one that just stops:
  // the object then resets the stream and aborts the public client's body (protocol.ts, "Body channels").
  // Its connection failing ("Network connection lost" under wrangler dev) left the pipe's far end open, and
  // the object waited on it: the public client held a 200 with part of the body until it gave up (over 90 s).
  // So the subrequest is cancelled then, which the object reads as its request body failing. A body that ends
  // early without an error (how the Vitest integration hands it over) fails the pipe's length instead.
  const pipe = new FixedLengthStream(length);
  const stop = new AbortController();
  const broken = new AbortController();
  const carried = request.body.pipeTo(pipe.writable, { signal: stop.signal, preventAbort: true }).catch((error: unknown) => {
    if (!stop.signal.aborted) broken.abort(error);
  });
  let answer: Response;
  try {
    answer = await env.TUNNEL_SESSION.get(id).fetch(`https://tunnel-session${BODY_PATH}?stream=${stream}`, {
      method: "POST",
      headers,
      body: pipe.readable,
      signal: broken.signal,
    });
  } catch (error) {
    if (!broken.signal.aborted) throw error;
    // the agent's connection is gone: nothing reads this answer
    const reason: unknown = broken.signal.reason;
    return refuse(409, `The body channel's POST broke off: ${reason instanceof Error ? reason.message : String(reason)}`);
  }
  stop.abort();
  await carried;
  return answer;
}
