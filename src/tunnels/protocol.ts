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
 * stop_tunnel → tunnel_stopped (the edge may also send tunnel_stopped on its own).
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
 * in `npm run bench:relay-shapes`, a bare relay moved 10 MiB downloads at 0.30 × its origin fetch as WebSocket
 * messages and 0.57 × as a POST; Tollgate's downloads cost the edge ~40 % less CPU this way.
 *
 * Heartbeats are the text messages HEARTBEAT_PING (agent) and HEARTBEAT_PONG (edge), outside the binary
 * frames, so a hibernating TunnelSession can answer them without waking up.
 */

import { z } from "zod";
import { closeReasonFits, MAX_CLOSE_REASON_BYTES } from "../close-reason.ts";

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
 * costs about the same whatever its size: a 10 MiB upload read 64 KiB at a time took ~180 reads, 512 KiB at
 * a time ~25, and ran ~30 % faster). What either end buffers is still bounded by the window, not by the
 * frame; a peer that did not say keeps to MAX_DATA_CHUNK.
 */
export const LARGE_DATA_CHUNK = 512 * 1024;
/** Largest WebSocket message relayed through a tunnel (workerd takes messages up to 1 MiB). */
export const MAX_WS_MESSAGE = 1024 * 1024 - 1024;
/** Unacknowledged body bytes a sender may have in flight per stream and direction. */
export const INITIAL_STREAM_WINDOW = 512 * 1024;
const HEADER_BYTES = 10;
/**
 * Frames are batched into WebSocket messages up to about this size: eight full data frames (workerd accepts
 * messages up to 1 MiB). A message is per-message work at both ends, whatever its size.
 */
export const MAX_MESSAGE_BYTES = 8 * (MAX_DATA_CHUNK + HEADER_BYTES + 4);
export const MAX_STREAM_ID = 0xffffffff;
/** Statuses whose responses have no body, whatever their headers say. */
export const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 204, 205, 304]);

/** A content-length header's value as a byte count: 1–15 digits (surrounding spaces allowed), else undefined. */
export function parseContentLength(value: string | null | undefined): number | undefined {
  const trimmed = value?.trim();
  return trimmed !== undefined && /^\d{1,15}$/.test(trimmed) ? Number(trimmed) : undefined;
}

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
const TYPE_NAMES = new Map<number, FrameTypeName>(Object.entries(FRAME_TYPES).map(([name, code]) => [code, name as FrameTypeName]));

const headerList = z.array(z.tuple([z.string().min(1).max(256), z.string().max(16 * 1024)])).max(512);
const labels = z.record(z.string().min(1).max(256), z.string().max(1024));

/** JSON payloads by frame type. Unknown fields are dropped, so a newer peer may add fields within a version. */
export const payloadSchemas = {
  hello: z.object({
    agent_version: z.string().max(64),
    /** Free text from the agent config's `metadata`. */
    metadata: z.string().max(4096).optional(),
    os: z.string().max(64).optional(),
    /** Largest data frame body the agent takes from the edge; absent (an older agent): MAX_DATA_CHUNK. */
    max_data_chunk: z.number().int().min(MAX_DATA_CHUNK).max(LARGE_DATA_CHUNK).optional(),
  }),
  welcome: z.object({
    session_id: z.string(),
    region: z.string(),
    /** How often the agent should send HEARTBEAT_PING. */
    heartbeat_ms: z.number().int().positive(),
    /** Largest data frame body the edge takes from this agent; absent (an older edge): MAX_DATA_CHUNK. */
    max_data_chunk: z.number().int().min(MAX_DATA_CHUNK).max(LARGE_DATA_CHUNK).optional(),
    /** Offered body channels: the session object's id and the token a body POST must carry; absent, none. */
    body_channel: z
      .object({
        object: z.string().regex(/^[0-9a-f]{64}$/),
        token: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
        /** Largest body the edge takes this way. */
        max_bytes: z.number().int().min(BODY_CHANNEL_MIN_BYTES).max(Number.MAX_SAFE_INTEGER),
      })
      .optional(),
  }),
  start_tunnel: z.object({
    request_id: z.number().int().nonnegative(),
    name: z.string().min(1).max(256),
    /** `http`, `tcp`, `tls` (the edge serves http only); absent for labeled tunnels. */
    proto: z.string().max(16).optional(),
    labels: labels.optional(),
    /** The local address the agent forwards to, as shown in `forwards_to`. */
    forwards_to: z.string().max(2048),
    metadata: z.string().max(4096).optional(),
    traffic_policy: z.unknown().optional(),
    /** Host name label wanted (a configured subdomain, or the previous one after a reconnect). */
    subdomain: z.string().max(63).optional(),
    /**
     * Share the host with the account's other tunnels that opt in too (an endpoint pool). Absent (an older
     * agent) means false; an older edge strips it and serves the host as a single tunnel's.
     */
    pooling_enabled: z.boolean().optional(),
  }),
  tunnel_started: z.object({
    request_id: z.number().int().nonnegative(),
    tunnel: z.object({
      id: z.string(),
      name: z.string(),
      public_url: z.string().optional(),
      proto: z.string().optional(),
      subdomain: z.string().optional(),
      started_at: z.string(),
    }),
  }),
  tunnel_failed: z.object({
    request_id: z.number().int().nonnegative(),
    code: z.string(),
    message: z.string(),
  }),
  stop_tunnel: z.object({ request_id: z.number().int().nonnegative(), tunnel_id: z.string() }),
  tunnel_stopped: z.object({ request_id: z.number().int().nonnegative().optional(), tunnel_id: z.string(), reason: z.string() }),
  request_head: z.object({
    tunnel_id: z.string(),
    method: z.string().min(1).max(32),
    /** Path and query as the public client sent them. */
    target: z
      .string()
      .min(1)
      .max(16 * 1024),
    headers: headerList,
    /** The public client's address. */
    client_addr: z.string().max(64),
    /** `http` or `https`: how the public client reached the edge. */
    scheme: z.string().max(8),
    /** Set when the public client asks for a WebSocket: the agent opens one to the local service. */
    upgrade: z.literal("websocket").optional(),
  }),
  response_head: z.object({
    status: z.number().int().min(100).max(599),
    status_text: z.string().max(256).optional(),
    headers: headerList,
    /** The body comes through a body channel, not in data frames (see "Body channels"). */
    body_channel: z.literal(true).optional(),
  }),
  reset: z.object({
    code: z.string().max(64),
    message: z.string().max(MAX_RESET_MESSAGE),
  }),
  ws_close: z.object({
    code: z.number().int().min(1000).max(4999),
    reason: z.string().refine(closeReasonFits, `must be at most ${MAX_CLOSE_REASON_BYTES} bytes of UTF-8`),
  }),
} as const;

type Payloads = { [K in keyof typeof payloadSchemas]: z.output<(typeof payloadSchemas)[K]> };

const isString = (value: unknown, min: number, max: number): value is string => typeof value === "string" && value.length >= min && value.length <= max;

function isHeaderList(value: unknown): value is Array<[string, string]> {
  if (!Array.isArray(value) || value.length > 512) return false;
  for (const pair of value) if (!Array.isArray(pair) || pair.length !== 2 || !isString(pair[0], 1, 256) || !isString(pair[1], 0, 16 * 1024)) return false;
  return true;
}

/**
 * The heads of every relayed exchange, checked without zod (its parse was ~3 % of a small request's CPU at
 * the edge): exactly the schemas' rules above, keeping only their fields. Anything these do not accept goes to
 * the schema, which accepts the same and words the error.
 */
export const FAST_PAYLOADS: Partial<{ [K in keyof Payloads]: (value: unknown) => Payloads[K] | undefined }> = {
  response_head(value) {
    if (typeof value !== "object" || value === null) return undefined;
    const { status, status_text, headers, body_channel } = value as Record<string, unknown>;
    if (typeof status !== "number" || !Number.isInteger(status) || status < 100 || status > 599) return undefined;
    if (status_text !== undefined && !isString(status_text, 0, 256)) return undefined;
    if (!isHeaderList(headers)) return undefined;
    if (body_channel !== undefined && body_channel !== true) return undefined;
    const head = status_text === undefined ? { status, headers } : { status, status_text, headers };
    return body_channel === undefined ? head : { ...head, body_channel };
  },
  request_head(value) {
    if (typeof value !== "object" || value === null) return undefined;
    const { tunnel_id, method, target, headers, client_addr, scheme, upgrade } = value as Record<string, unknown>;
    if (typeof tunnel_id !== "string" || !isString(method, 1, 32) || !isString(target, 1, 16 * 1024) || !isHeaderList(headers)) return undefined;
    if (!isString(client_addr, 0, 64) || !isString(scheme, 0, 8) || (upgrade !== undefined && upgrade !== "websocket")) return undefined;
    const head = { tunnel_id, method, target, headers, client_addr, scheme };
    return upgrade === undefined ? head : { ...head, upgrade };
  },
};

export type SessionFrame =
  | ({ type: "hello" } & Payloads["hello"])
  | ({ type: "welcome" } & Payloads["welcome"])
  | ({ type: "start_tunnel" } & Payloads["start_tunnel"])
  | ({ type: "tunnel_started" } & Payloads["tunnel_started"])
  | ({ type: "tunnel_failed" } & Payloads["tunnel_failed"])
  | ({ type: "stop_tunnel" } & Payloads["stop_tunnel"])
  | ({ type: "tunnel_stopped" } & Payloads["tunnel_stopped"]);

export type StreamFrame =
  | ({ type: "request_head"; stream: number } & Payloads["request_head"])
  | ({ type: "response_head"; stream: number } & Payloads["response_head"])
  | { type: "data"; stream: number; seq: number; bytes: Uint8Array }
  | { type: "end"; stream: number; count: number }
  | { type: "window"; stream: number; increment: number }
  | ({ type: "reset"; stream: number } & Payloads["reset"])
  /** A message of a relayed WebSocket (after a 101 response head), either way. */
  | { type: "ws_message"; stream: number; binary: boolean; bytes: Uint8Array }
  /** One end of a relayed WebSocket closed; the other should close with the same code. */
  | ({ type: "ws_close"; stream: number } & Payloads["ws_close"]);

export type Frame = SessionFrame | StreamFrame;
export type FrameOf<T extends Frame["type"]> = Extract<Frame, { type: T }>;

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

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function isSessionType(type: FrameTypeName): boolean {
  return FRAME_TYPES[type] < FRAME_TYPES.request_head;
}

function writeHeader(target: Uint8Array, offset: number, type: FrameTypeName, stream: number, payloadLength: number): DataView {
  target[offset] = PROTOCOL_VERSION;
  target[offset + 1] = FRAME_TYPES[type];
  const view = new DataView(target.buffer, target.byteOffset + offset);
  view.setUint32(2, stream);
  view.setUint32(6, payloadLength);
  return view;
}

function checkStream(frame: Frame): number {
  const stream = "stream" in frame ? frame.stream : 0;
  if (!Number.isInteger(stream) || stream < 0 || stream > MAX_STREAM_ID) throw new RangeError(`stream id ${stream} is out of range`);
  return stream;
}

/** A frame whose payload is raw bytes after a fixed part: encoded in place, straight into a message. */
export type BinaryFrame = FrameOf<"data"> | FrameOf<"end"> | FrameOf<"window"> | FrameOf<"ws_message">;

export function isBinaryFrame(frame: Frame): frame is BinaryFrame {
  return frame.type === "data" || frame.type === "end" || frame.type === "window" || frame.type === "ws_message";
}

/** Bytes a binary frame takes, header included. */
export function binaryFrameSize(frame: BinaryFrame): number {
  switch (frame.type) {
    case "data":
      return HEADER_BYTES + 4 + frame.bytes.byteLength;
    case "ws_message":
      return HEADER_BYTES + 1 + frame.bytes.byteLength;
    default:
      return HEADER_BYTES + 4;
  }
}

/** Writes a binary frame at `offset` of `target` (which has binaryFrameSize(frame) bytes there); returns the offset after it. */
export function writeBinaryFrame(frame: BinaryFrame, target: Uint8Array, offset: number): number {
  const stream = checkStream(frame);
  const size = binaryFrameSize(frame);
  const view = writeHeader(target, offset, frame.type, stream, size - HEADER_BYTES);
  switch (frame.type) {
    case "data":
      view.setUint32(HEADER_BYTES, frame.seq);
      target.set(frame.bytes, offset + HEADER_BYTES + 4);
      break;
    case "end":
      view.setUint32(HEADER_BYTES, frame.count);
      break;
    case "window":
      view.setUint32(HEADER_BYTES, frame.increment);
      break;
    case "ws_message":
      target[offset + HEADER_BYTES] = frame.binary ? 1 : 0;
      target.set(frame.bytes, offset + HEADER_BYTES + 1);
      break;
  }
  return offset + size;
}

/** Bytes a data frame puts before its body: the header and the sequence number. */
export const DATA_FRAME_HEADROOM = HEADER_BYTES + 4;

/**
 * Encodes a data frame without copying its body: the header goes into the DATA_FRAME_HEADROOM bytes just
 * before `frame.bytes` in its buffer, which the caller owns and left free for it. Returns the whole frame.
 */
export function encodeDataInPlace(frame: FrameOf<"data">): Uint8Array {
  const stream = checkStream(frame);
  const { bytes } = frame;
  if (bytes.byteOffset < DATA_FRAME_HEADROOM) throw new RangeError(`a data frame's body at offset ${bytes.byteOffset} leaves no room for its header`);
  const encoded = new Uint8Array(bytes.buffer, bytes.byteOffset - DATA_FRAME_HEADROOM, DATA_FRAME_HEADROOM + bytes.byteLength);
  writeHeader(encoded, 0, "data", stream, 4 + bytes.byteLength).setUint32(HEADER_BYTES, frame.seq);
  return encoded;
}

/** Encodes one frame. Throws only on a programming error (a stream id out of range). */
export function encodeFrame(frame: Frame): Uint8Array {
  if (isBinaryFrame(frame)) {
    const bytes = new Uint8Array(binaryFrameSize(frame));
    writeBinaryFrame(frame, bytes, 0);
    return bytes;
  }
  const stream = checkStream(frame);
  const { type, ...rest } = frame;
  delete (rest as { stream?: number }).stream;
  const json = encoder.encode(JSON.stringify(rest));
  const bytes = new Uint8Array(HEADER_BYTES + json.byteLength);
  writeHeader(bytes, 0, type, stream, json.byteLength);
  bytes.set(json, HEADER_BYTES);
  return bytes;
}

export type DecodeResult = { ok: true; frame: Frame } | { ok: false; error: string };

function fail(error: string): { ok: false; error: string } {
  return { ok: false, error };
}

export type DecodeManyResult = { ok: true; frames: Frame[] } | { ok: false; error: string };

/**
 * Decodes and validates the frames of one WebSocket message; anything malformed comes back as
 * `ok: false` with the reason (and nothing of the message is used).
 */
export function decodeFrames(input: ArrayBuffer | ArrayBufferView, maxDataChunk: number = MAX_DATA_CHUNK): DecodeManyResult {
  // ArrayBuffer.isView rather than instanceof: buffers may come from another realm (a test runner, a worker).
  const bytes = ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frames: Frame[] = [];
  let offset = 0;
  do {
    const left = bytes.byteLength - offset;
    if (left < HEADER_BYTES) return fail(`frame of ${left} bytes is shorter than the ${HEADER_BYTES}-byte header`);
    if (bytes[offset] !== PROTOCOL_VERSION) return fail(`protocol version ${bytes[offset]} is not supported (this end speaks version ${PROTOCOL_VERSION})`);
    const type = TYPE_NAMES.get(bytes[offset + 1]);
    if (!type) return fail(`unknown frame type ${bytes[offset + 1]}`);
    const stream = view.getUint32(offset + 2);
    const length = view.getUint32(offset + 6);
    if (length > left - HEADER_BYTES) return fail(`${type} frame declares ${length} payload bytes but the message has ${left - HEADER_BYTES} left`);
    if (isSessionType(type) !== (stream === 0)) {
      return fail(isSessionType(type) ? `${type} frame must be on stream 0` : `${type} frame must not be on stream 0`);
    }
    const decoded = decodePayload(type, stream, bytes.subarray(offset + HEADER_BYTES, offset + HEADER_BYTES + length), maxDataChunk);
    if (!decoded.ok) return fail(decoded.error);
    frames.push(decoded.frame);
    offset += HEADER_BYTES + length;
  } while (offset < bytes.byteLength);
  return { ok: true, frames };
}

/** Decodes a message that holds exactly one frame. */
export function decodeFrame(input: ArrayBuffer | ArrayBufferView): DecodeResult {
  const decoded = decodeFrames(input);
  if (!decoded.ok) return decoded;
  if (decoded.frames.length !== 1) return fail(`expected one frame, the message has ${decoded.frames.length}`);
  return { ok: true, frame: decoded.frames[0] };
}

function decodePayload(type: FrameTypeName, stream: number, payload: Uint8Array, maxDataChunk: number): DecodeResult {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  switch (type) {
    case "data":
      if (payload.byteLength < 4) return fail("data frame must start with a 4-byte sequence number");
      if (payload.byteLength - 4 > maxDataChunk) return fail(`data frame of ${payload.byteLength - 4} bytes exceeds ${maxDataChunk}`);
      return { ok: true, frame: { type, stream, seq: view.getUint32(0), bytes: payload.subarray(4) } };
    case "end":
      if (payload.byteLength !== 4) return fail("end frame must carry a 4-byte count of data frames");
      return { ok: true, frame: { type, stream, count: view.getUint32(0) } };
    case "window": {
      if (payload.byteLength !== 4) return fail("window frame must carry a 4-byte increment");
      const increment = view.getUint32(0);
      if (increment === 0) return fail("window increment must be positive");
      return { ok: true, frame: { type, stream, increment } };
    }
    case "ws_message":
      if (payload.byteLength < 1 || payload[0] > 1) return fail("ws_message frame must start with a 0 (text) or 1 (binary) byte");
      if (payload.byteLength - 1 > MAX_WS_MESSAGE) return fail(`ws_message of ${payload.byteLength - 1} bytes exceeds ${MAX_WS_MESSAGE}`);
      return { ok: true, frame: { type, stream, binary: payload[0] === 1, bytes: payload.subarray(1) } };
    default: {
      let value: unknown;
      try {
        value = JSON.parse(decoder.decode(payload));
      } catch {
        return fail(`${type} frame payload is not valid UTF-8 JSON`);
      }
      const fast = FAST_PAYLOADS[type]?.(value);
      if (fast) return { ok: true, frame: { type, stream, ...fast } as Frame };
      const parsed = payloadSchemas[type].safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return fail(`${type} frame: ${issue.path.join(".") || "payload"}: ${issue.message}`);
      }
      const frame = (isSessionType(type) ? { type, ...parsed.data } : { type, stream, ...parsed.data }) as Frame;
      return { ok: true, frame };
    }
  }
}

/** WebSocket close codes an endpoint may send (1005, 1006 and 1015 only describe what happened); others become 1000. */
export function sendableCloseCode(code: number): number {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1000;
}

/** Headers that describe one hop and are never relayed. */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
