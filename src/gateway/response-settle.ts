/**
 * Runs the settles of a request (rate-limit's `settle_cost`) when its target's response arrives, without ever
 * holding the response up: a settle that reads only the status and headers is evaluated at once; one that reads
 * `res.body` gets the JSON body from a second branch of it (a tee), read up to MAX_SETTLE_BODY_BYTES while the
 * client receives the whole body streaming from the other branch. What is sent to the buckets runs after the
 * response (the request's waitUntil); without one, nothing is settled and the estimates stay.
 */

import { textWithin } from "../bounded-read.ts";
import type { AfterResponse, Exchange, ResponseSettle } from "../policy/exchange.ts";
import { isJsonContentType, jsonBodyValue, MAX_SETTLE_BODY_BYTES } from "../policy/variables/response-body.ts";

/**
 * The body's text when it is at most `limit` bytes, else undefined (the branch is then cancelled at once, so
 * nothing more is read for the settle, and the tee keeps no more of the body than the client has yet to read).
 */
export async function readBounded(body: ReadableStream<Uint8Array>, limit: number): Promise<string | undefined> {
  try {
    return await textWithin(body, limit);
  } catch {
    // The upstream broke off: a partial body settles nothing.
    return undefined;
  }
}

/** Where a settle that could not be made is reported (at a bounded rate: ExpressionErrorLog is one). */
export interface SettleLog {
  settleError(owner: object, source: string, message: string): void;
}

/** Settles each one with `body` (undefined: res.body absent); a settle never throws, so neither does this. */
async function settleAll(settles: readonly ResponseSettle[], status: number, headers: Headers, body: Promise<unknown>, log: SettleLog): Promise<void> {
  const value = await body;
  await Promise.all(
    settles.map(async (settle) => {
      const failed = await settle.settle({ status, headers }, settle.readsBody ? value : undefined);
      if (failed !== undefined) log.settleError(settle.owner, settle.source, failed);
    }),
  );
}

/**
 * The response to send on, after starting the exchange's settles on it: `response` itself, or, when a settle
 * reads a JSON body, the same status and headers with the client's branch of the body.
 */
export function settleOnResponse(response: Response, exchange: Exchange, afterResponse: AfterResponse | undefined, log: SettleLog): Response {
  const settles = exchange.settles;
  if (!settles || settles.length === 0 || !afterResponse) return response;
  exchange.settles = undefined;
  // The headers as the upstream sent them, copied: the outbound policy may change the response's afterwards.
  const headers = new Headers(response.headers);
  const readable =
    settles.some((settle) => settle.readsBody) && response.body !== null && !response.webSocket && isJsonContentType(headers.get("content-type"));
  if (!readable || !response.body) {
    afterResponse.waitUntil(settleAll(settles, response.status, headers, Promise.resolve(undefined), log));
    return response;
  }
  const [toClient, toSettle] = response.body.tee();
  const body = readBounded(toSettle, MAX_SETTLE_BODY_BYTES).then((text) => (text === undefined ? undefined : jsonBodyValue(text)));
  afterResponse.waitUntil(settleAll(settles, response.status, headers, body, log));
  return new Response(toClient, { status: response.status, statusText: response.statusText, headers: response.headers });
}
