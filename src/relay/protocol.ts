/**
 * The tunnel relay protocol: binary WebSocket frames between the edge (TunnelSession) and the local agent.
 * One definition for both ends; every frame is validated when it is read.
 *
 * A binary WebSocket message carries one or more frames back to back. Frame layout (integers big-endian):
 *
 *   byte 0     protocol version (PROTOCOL_VERSION)
 *   byte 1     frame type (FRAME_TYPES)
 *   bytes 2-5  stream id (u32); 0 for session frames
 *   bytes 6-9  payload length (u32)
 *   bytes 10-  payload: JSON (UTF-8) for most frames; for `data` a u32 sequence number then the body bytes;
 *              for `end` a u32 count of the data frames sent; for `window` a u32 increment
 *
 * Session frames (stream 0): hello → welcome; start_tunnel → tunnel_started | tunnel_failed;
 * stop_tunnel → tunnel_stopped (the edge may also send tunnel_stopped on its own); edge_decision (edge → agent,
 * to agents that asked in hello): a request the edge's policy answered itself, at a bounded rate.
 * Stream frames: the edge opens a stream with request_head; request body as data… end; the agent answers
 * response_head, data… end; either side may reset. Flow control is per stream and per direction: a sender
 * may have at most INITIAL_STREAM_WINDOW unacknowledged body bytes, plus whatever `window` frames granted;
 * the receiver sends `window` with the number of bytes it has passed on, which the sender may send again
 * (and may grant a stream carrying a large body more up front: window-budget.ts).
 *
 * Data frames are numbered per stream and direction, and `end` says how many there were, so a receiver
 * restores a body's order even if its runtime hands over messages out of order (seen in workerd under the
 * Workers Vitest integration, whose test-side sockets feed the object; not seen with network clients).
 * framing.ts has the helpers both ends use for that and for batching frames into messages.
 *
 * Body channels: a response body of BODY_CHANNEL_MIN_BYTES up to the welcome's `max_bytes`, of known length, may go as the
 * body of one HTTP POST from the agent to AGENT_BODY_PATH on the edge, when the edge offered it (`body_channel`
 * in welcome): the agent's response_head says `body_channel: true` and no data or end frames follow for the
 * stream. The POST names the session object and stream, and carries the session's token; the edge pipes it
 * into the public client's response and answers 204 once the client has taken all of it. The platform's
 * streams carry the bytes with their own backpressure, and no body byte passes through the object's JavaScript:
 * `npm run bench:relay-shapes` shows a POST moving downloads faster than WebSocket messages, and Tollgate's
 * downloads cost the edge less CPU this way (figures: docs/benchmark.md#figures-behind-constants-in-the-code).
 *
 * Heartbeats are the text messages HEARTBEAT_PING (agent) and HEARTBEAT_PONG (edge), outside the binary
 * frames, so a hibernating TunnelSession can answer them without waking up.
 */

export const PROTOCOL_VERSION = 1;
/** Path of the agent WebSocket endpoint on any edge host name that is not a tunnel host. */
export const AGENT_SESSION_PATH = "/__tollgate/agent";
/** Path of the agent's response-body POSTs (see "Body channels" above), on the same hosts as AGENT_SESSION_PATH. */
export const AGENT_BODY_PATH = "/__tollgate/agent/body";
/** Smallest response body (content-length) the agent sends through a body channel; smaller ones go as frames. */
export const BODY_CHANNEL_MIN_BYTES = 1024 * 1024;
/**
 * Largest body the edge takes through a body channel (announced in welcome as `max_bytes`); larger ones go as
 * frames. Under every Cloudflare plan's request-body limit (100 MB on Free and Pro), which refuses a larger POST
 * with 413 before the Worker runs.
 */
export const BODY_CHANNEL_MAX_BYTES = 64 * 1024 * 1024;
export const HEARTBEAT_PING = "tollgate:ping";
export const HEARTBEAT_PONG = "tollgate:pong";
/** Largest body chunk carried by one data frame. */
export const MAX_DATA_CHUNK = 64 * 1024;
/**
 * Largest body chunk of a data frame between ends that said they take it (`max_data_chunk` in welcome, from
 * the edge; in hello, from the agent): a frame per message rather than eight, so the edge writes a response
 * body into the client's stream, and reads a request body from it, an eighth as often (each write or read
 * costs about the same whatever its size, so fewer, larger reads made uploads faster: docs/benchmark.md#figures-behind-constants-in-the-code).
 * What either end buffers is still bounded by the window, not by the
 * frame; a peer that did not say keeps to MAX_DATA_CHUNK.
 */
export const LARGE_DATA_CHUNK = 512 * 1024;
/** Largest WebSocket message relayed through a tunnel (workerd takes messages up to 1 MiB). */
export const MAX_WS_MESSAGE = 1024 * 1024 - 1024;
/** Unacknowledged body bytes a sender may have in flight per stream and direction. */
export const INITIAL_STREAM_WINDOW = 512 * 1024;
/** Bytes of every frame's header: version, type, stream id, payload length. */
export const FRAME_HEADER_BYTES = 10;
/**
 * Frames are batched into WebSocket messages up to about this size: eight full data frames (workerd accepts
 * messages up to 1 MiB). A message is per-message work at both ends, whatever its size.
 */
export const MAX_MESSAGE_BYTES = 8 * (MAX_DATA_CHUNK + FRAME_HEADER_BYTES + 4);
export const MAX_STREAM_ID = 0xffffffff;

/** Longest reset message (characters); StreamCore.reset cuts a longer one. */
export const MAX_RESET_MESSAGE = 4096;

/** WebSocket close codes the edge uses (4000–4999 are free for applications). */
export const CloseCode = {
  normal: 1000,
  protocolError: 1002,
  heartbeatTimeout: 4001,
  sessionReplaced: 4002,
} as const;

export const FRAME_TYPES = {
  hello: 1,
  welcome: 2,
  start_tunnel: 3,
  tunnel_started: 4,
  tunnel_failed: 5,
  stop_tunnel: 6,
  tunnel_stopped: 7,
  /** Edge → agent, only to an agent whose hello named EDGE_DECISIONS_VERSION (edge-decision.ts). */
  edge_decision: 8,
  request_head: 16,
  response_head: 17,
  data: 18,
  end: 19,
  window: 20,
  reset: 21,
  ws_message: 22,
  ws_close: 23,
} as const;

export type FrameTypeName = keyof typeof FRAME_TYPES;

/** Reset codes: why a stream ended early. */
export const ResetCode = {
  /** The agent could not connect to the local address. */
  upstreamUnreachable: "upstream_unreachable",
  /** The local service did not answer in time. */
  upstreamTimeout: "upstream_timeout",
  /** The local service broke the exchange (bad response, closed mid-body). */
  upstreamError: "upstream_error",
  /** The public client went away. */
  cancelled: "cancelled",
  /** The stream's tunnel is not open on this session. */
  unknownTunnel: "unknown_tunnel",
  /** The agent already serves as many streams as it takes (an older edge answers it as any other reset). */
  tooManyStreams: "too_many_streams",
  protocolError: "protocol_error",
} as const;

/** Why the edge refused a start_tunnel. */
export const TunnelFailure = {
  unsupportedProto: "unsupported_proto",
  invalidDefinition: "invalid_definition",
  invalidTrafficPolicy: "invalid_traffic_policy",
  subdomainInUse: "subdomain_in_use",
  subdomainReserved: "subdomain_reserved",
  hostQuotaExceeded: "host_quota_exceeded",
  tunnelsDisabled: "tunnels_disabled",
  internal: "internal",
} as const;
