/**
 * How the Worker talks to a tunnel session object: the paths of its fetch handler and the headers of its answers.
 * Apart from the object, so its callers (the agent endpoint, the relay target) need not import the object itself.
 */

/** The agent's WebSocket upgrade, handed on by the agent endpoint. */
export const CONNECT_PATH = "/connect";
/** A public request relayed to one of the session's tunnels. */
export const RELAY_PATH = "/relay";
/** The relay answer header that says the tunnel is not (or no longer) served by this session. */
export const OFFLINE_HEADER = "x-tollgate-tunnel-offline";
/** The connect request header carrying the session's info (JSON SessionInfo: the session and account ids, region, domain, public base) from the agent endpoint to the object. */
export const SESSION_INFO_HEADER = "x-tollgate-session-info";
