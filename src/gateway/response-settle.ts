/**
 * Runs the settles of a request (rate-limit's `settle_cost`) when its target's response arrives, without ever
 * holding the response up: a settle that reads only the status and headers is evaluated at once; one that reads
 * `res.body` gets it from a second branch of the body (a tee) while the client receives the whole body streaming
 * from the other: a JSON body read up to MAX_SETTLE_BODY_BYTES, or an event stream read to its end within the
 * bounds of event-stream-body.ts. What is sent to the buckets runs after the response (the request's waitUntil);
 * without one, nothing is settled and the estimates stay.
 */

import { bytesWithin, type ReadAllowance } from "../bounded-read.ts";
import { RESERVATION_TTL_MS } from "../limiter/settle.ts";
import type { BodyAllowance } from "../policy/body-budget.ts";
import type { AfterResponse, Exchange, ResponseSettle } from "../policy/exchange.ts";
import { isJsonContentType, jsonBodyValue, MAX_SETTLE_BODY_BYTES } from "../policy/variables/response-body.ts";
import { eventStreamBody, isEventStreamContentType, type StreamBody } from "./event-stream-body.ts";

/** Where a settle that could not be made is reported (at a bounded rate: ExpressionErrorLog is one). */
export interface SettleLog {
  settleError(owner: object, source: string, message: string): void;
}

/** Settles each one with `body`'s value (absent: res.body absent, and why); a settle never throws, so neither does this. */
async function settleAll(settles: readonly ResponseSettle[], status: number, headers: Headers, body: Promise<StreamBody>, log: SettleLog): Promise<void> {
  const read = await body;
  const value = "value" in read ? read.value : undefined;
  await Promise.all(
    settles.map(async (settle) => {
      const failed = await settle.settle({ status, headers }, settle.readsBody ? value : undefined);
      if (failed === undefined) return;
      log.settleError(settle.owner, settle.source, settle.readsBody && "absent" in read ? `${failed}; res.body is absent: ${read.absent}` : failed);
    }),
  );
}

const NO_BODY: StreamBody = { absent: "the expression does not read it" };
const NO_RESPONSE_BODY: StreamBody = { absent: "the response has no body" };
const OTHER_CONTENT_TYPE: StreamBody = { absent: "the content type is neither JSON nor text/event-stream" };

/**
 * A JSON body's value, read from its branch within MAX_SETTLE_BODY_BYTES and, as it arrives, within `hold` (of
 * the isolate's body budget): a body the budget cannot hold is not read, and the estimate stays.
 */
async function jsonBody(branch: ReadableStream<Uint8Array>, hold?: ReadAllowance, idleMs?: number): Promise<StreamBody> {
  let text: string | undefined;
  try {
    const read = await bytesWithin(branch, MAX_SETTLE_BODY_BYTES, hold, idleMs);
    if (!read.ok && read.why === "busy") return { absent: "the gateway holds as many bodies as its budget lets it; not read" };
    text = read.ok ? new TextDecoder().decode(read.bytes) : undefined;
  } catch {
    // The upstream broke off: a partial body settles nothing.
  }
  if (text === undefined) return { absent: `a body of more than ${MAX_SETTLE_BODY_BYTES} bytes, or broken off, or silent` };
  const value = jsonBodyValue(text);
  return value === undefined ? { absent: "not JSON, or nested too deep" } : { value };
}

/**
 * An event stream's value. Read for at most the reservation's lifetime from now: the request was admitted before
 * its response arrived, so by then its reservation has expired and no settle could change anything.
 */
async function streamBody(branch: ReadableStream<Uint8Array>): Promise<StreamBody> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, RESERVATION_TTL_MS);
  });
  try {
    return await eventStreamBody(branch, expired);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/**
 * The response to send on, after starting the exchange's settles on it: `response` itself, or, when a settle
 * reads the body of a JSON or event-stream response, the same status and headers with the client's branch of it.
 * `bodies`: the budget a JSON body read holds its bytes of, and gives up on after its read idle time without a
 * chunk (an event stream is read without holding it whole).
 */
export function settleOnResponse(
  response: Response,
  exchange: Exchange,
  afterResponse: AfterResponse | undefined,
  log: SettleLog,
  bodies?: BodyAllowance,
): Response {
  const settles = exchange.settles;
  if (!settles || settles.length === 0 || !afterResponse) return response;
  exchange.settles = undefined;
  // The headers as the upstream sent them, copied: the outbound policy may change the response's afterwards.
  const headers = new Headers(response.headers);
  const contentType = headers.get("content-type");
  const json = (branch: ReadableStream<Uint8Array>) => jsonBody(branch, bodies?.budget.hold(bodies.party, bodies.client), bodies?.budget.limits.readIdleMs);
  const reader = isJsonContentType(contentType) ? json : isEventStreamContentType(contentType) ? streamBody : undefined;
  let unread: StreamBody | undefined;
  if (!settles.some((settle) => settle.readsBody)) unread = NO_BODY;
  else if (!response.body || response.webSocket) unread = NO_RESPONSE_BODY;
  else if (!reader) unread = OTHER_CONTENT_TYPE;
  if (unread || !response.body || !reader) {
    afterResponse.waitUntil(settleAll(settles, response.status, headers, Promise.resolve(unread ?? NO_BODY), log));
    return response;
  }
  const [toClient, toSettle] = response.body.tee();
  afterResponse.waitUntil(settleAll(settles, response.status, headers, reader(toSettle), log));
  return new Response(toClient, { status: response.status, statusText: response.statusText, headers: response.headers });
}
