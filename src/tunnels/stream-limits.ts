/**
 * How many relayed requests one tunnel session carries at once at the edge, and what a public client gets
 * past that. Each stream may make the session object hold a window of response body for a client that stopped
 * reading, so the count bounds the object's memory; and each is a connection to the local service (and maybe a
 * body channel) at the agent, so it bounds the agent's open files too.
 */

import { ServiceError } from "../errors.ts";
import { TunnelErrorCode } from "./errors.ts";
import { ResetCode } from "../relay/index.ts";

/**
 * Streams one session carries at once (HTTP requests in flight, and WebSocket upgrades until they are answered).
 * A public client that stopped reading holds its stream's window at the edge: INITIAL_STREAM_WINDOW, 512 KiB
 * (stalled readers measured: docs/benchmark.md#figures-behind-constants-in-the-code). 100 such streams
 * hold ~51 MB, and the session's window boosts at most 16 MiB more (SESSION_BOOST_BUDGET): about half of a
 * Durable Object's 128 MB, leaving the rest for request bodies being read and the object itself. 100 is also
 * the fewest concurrent streams RFC 9113 advises an HTTP/2 server to allow one connection, so one browser's page
 * load fits. The agent's own bound (MAX_AGENT_STREAMS) is above it, so a client meets this one first.
 */
export const MAX_SESSION_STREAMS = 100;

/** Seconds a refused client is told to wait: a place frees as soon as any stream of the session ends. */
export const BUSY_RETRY_AFTER_S = 1;

/** ERR_SVC_716: the session carries as many requests as it takes; one ending frees a place. */
const SESSION_BUSY_ADVICE = {
  title: "This tunnel is busy",
  steps: [
    "The tunnel is carrying as many requests at once as it takes. Try again in a moment: a place frees as soon as one of them ends.",
    "If this is your tunnel: requests that stay open (slow downloads, long polls, clients that stopped reading) hold their places; end them, or serve fewer at once.",
  ],
};

/** The public client's answer when the session (`reason`: why) takes no more streams now. */
export function sessionBusy(host: string, reason: string, details: Record<string, unknown> = {}): ServiceError {
  return new ServiceError(503, TunnelErrorCode.sessionBusy, `Tunnel ${host} is busy: ${reason}. Try again in a moment.`, {
    details: { host, reason: ResetCode.tooManyStreams, ...details },
    headers: { "retry-after": String(BUSY_RETRY_AFTER_S) },
    advice: SESSION_BUSY_ADVICE,
  });
}

/** The edge's own refusal: the session carries MAX_SESSION_STREAMS already. */
export function sessionFull(host: string, limit: number = MAX_SESSION_STREAMS): ServiceError {
  return sessionBusy(host, `its agent's session is carrying ${limit} requests at once, the most it takes`, { limit });
}
