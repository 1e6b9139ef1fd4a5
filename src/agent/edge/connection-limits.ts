/**
 * What the agent holds open at once for relaying, and the connection pools that hold it to that. Every stream
 * costs the agent open files: a connection to the local service (or a WebSocket to it), and for a large response
 * a body channel's connection to the edge. A process may have 1,024 open files on a desktop's default limit
 * (Node raises its soft limit to the hard one at start, but a hard limit of 1,024 is common too), and the agent
 * also needs some for its WebSocket to the edge, its inspector and its captures. So, for one agent session:
 *
 *   streams                   ≤ MAX_AGENT_STREAMS (128): each holds at most one local connection or WebSocket
 *   local HTTP connections    ≤ MAX_LOCAL_CONNECTIONS (128) per local address, in use or idle; idle ones are
 *                               closed after IDLE_LOCAL_CONNECTION_MS
 *   body channels             ≤ MAX_BODY_CHANNELS (64)
 *
 * For a session whose tunnels point at one local address: at most 128 pooled connections plus the WebSockets
 * of the other streams (together ≤ 256), plus 64 channels: 320 sockets, well inside 1,024. Each further local
 * address may keep up to 128 idle connections more, for at most 4 s.
 */

import http from "node:http";
import https from "node:https";

/**
 * Streams one agent session serves at once (HTTP exchanges and relayed WebSockets); a request head past it is
 * reset with `too_many_streams`, before anything is opened for it. The edge carries at most 100 HTTP streams per
 * session (MAX_SESSION_STREAMS) and answers past it itself, so this is met by an edge that does not bound them (an
 * older one) or when relayed WebSockets, which the edge stops counting once they are open, pile up. Each stream
 * may also hold up to its windows of body here (512 KiB each way, INITIAL_STREAM_WINDOW, plus the session's shared
 * 16 MiB of boosts), so 128 also keeps that within ~150 MiB.
 */
export const MAX_AGENT_STREAMS = 128;

/**
 * Connections to one local address (host and port) the agent keeps, in use or idle, across all tunnels and
 * replays: past it a request waits in the pool for one to free, holding no file. It is above the edge's 100
 * streams per session, so only replays wait. The pool is not capped across addresses (Node's `maxTotalSockets`):
 * a request queued there for an address that already has a connection gets no new one when another address's
 * connection closes (Node's Agent.removeSocket), so requests to a second local address went one at a time after
 * a burst to the first filled the pool (test/agent/stream-limits.test.ts). In use, connections are bounded
 * across addresses by MAX_AGENT_STREAMS.
 */
export const MAX_LOCAL_CONNECTIONS = 128;

/**
 * Body channels (one POST to the edge per large response) one session has open at once. A large response past
 * it goes in data frames instead, as it would to an edge that offers no channel: it is never queued behind
 * the others (the edge resets a stream whose POST does not come within 30 s). 64 large transfers at once
 * already share the session's bandwidth; more connections would not make them faster.
 */
export const MAX_BODY_CHANNELS = 64;

/**
 * Idle connections to the local service are closed after this long: under Node servers' default keep-alive
 * timeout of 5 s, so a request never goes out on a connection the service is closing at that moment (an
 * ECONNRESET, answered 502). Node also honours a shorter `Keep-Alive: timeout=` hint, but only when a timeout is set.
 * Sockets in use are not affected: their timeout only emits an event nothing here listens to.
 */
export const IDLE_LOCAL_CONNECTION_MS = 4_000;

const localOptions = { keepAlive: true, maxSockets: MAX_LOCAL_CONNECTIONS, timeout: IDLE_LOCAL_CONNECTION_MS };

/** The agent's keep-alive connections to local services, shared by every session, tunnel and replay of the process. */
export const localConnections = { http: new http.Agent(localOptions), https: new https.Agent(localOptions) };

/**
 * Connections for one session's body channels: kept idle as long as those to the local service, so a POST never
 * goes out on a connection the edge is closing. The pool's cap is the channels' (LocalForwarder opens no more
 * channels), so a POST waits in it at most until an ended channel's connection is handed back or closed.
 */
export function edgeConnections(): { http: http.Agent; https: https.Agent } {
  const options = { keepAlive: true, maxSockets: MAX_BODY_CHANNELS, timeout: IDLE_LOCAL_CONNECTION_MS };
  return { http: new http.Agent(options), https: new https.Agent(options) };
}
