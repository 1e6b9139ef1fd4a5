/** The frames of the relay protocol (protocol.ts): their JSON payloads' rules, checked when a frame is read. */

import { z } from "zod";
import { closeReasonFits, MAX_CLOSE_REASON_BYTES } from "../close-reason.ts";
import { carriedRateLimitsSchema, EDGE_DECISIONS_VERSION, edgeDecisionSchema } from "./edge-decision.ts";
import {
  MAX_CLIENT_ADDR_CHARS,
  MAX_HEADER_FIELDS,
  MAX_HEADER_NAME_CHARS,
  MAX_HEADER_VALUE_CHARS,
  MAX_METHOD_CHARS,
  MAX_SCHEME_CHARS,
  MAX_STATUS_TEXT_CHARS,
  MAX_TARGET_CHARS,
} from "./head-bounds.ts";
import { BODY_CHANNEL_MIN_BYTES, LARGE_DATA_CHUNK, MAX_DATA_CHUNK, MAX_RESET_MESSAGE } from "./protocol.ts";

// the bounds are head-bounds.ts's: the edge checks a request head against the same numbers before it relays it
const headerList = z.array(z.tuple([z.string().min(1).max(MAX_HEADER_NAME_CHARS), z.string().max(MAX_HEADER_VALUE_CHARS)])).max(MAX_HEADER_FIELDS);
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
    /** The edge_decision frame version the agent takes; absent (an older agent): the edge sends none. */
    edge_decisions: z.literal(EDGE_DECISIONS_VERSION).optional(),
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
    method: z.string().min(1).max(MAX_METHOD_CHARS),
    /** Path and query as the public client sent them. */
    target: z.string().min(1).max(MAX_TARGET_CHARS),
    headers: headerList,
    /** The public client's address. */
    client_addr: z.string().max(MAX_CLIENT_ADDR_CHARS),
    /** `http` or `https`: how the public client reached the edge. */
    scheme: z.string().max(MAX_SCHEME_CHARS),
    /** Set when the public client asks for a WebSocket: the agent opens one to the local service. */
    upgrade: z.literal("websocket").optional(),
    /** The rate limits the edge's policy counted this request against (an older agent drops the field). */
    decisions: carriedRateLimitsSchema.optional(),
  }),
  /** A request to one of the session's tunnels that the edge answered itself (edge-decision.ts). */
  edge_decision: edgeDecisionSchema,
  response_head: z.object({
    status: z.number().int().min(100).max(599),
    status_text: z.string().max(MAX_STATUS_TEXT_CHARS).optional(),
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
  if (!Array.isArray(value) || value.length > MAX_HEADER_FIELDS) return false;
  for (const pair of value)
    if (!Array.isArray(pair) || pair.length !== 2 || !isString(pair[0], 1, MAX_HEADER_NAME_CHARS) || !isString(pair[1], 0, MAX_HEADER_VALUE_CHARS))
      return false;
  return true;
}

/**
 * The heads of every relayed exchange, checked without zod (its parse was a measurable share of a small
 * request's CPU at the edge: docs/benchmark.md#figures-behind-constants-in-the-code): exactly the schemas' rules above, keeping only their fields. Anything these do not accept goes to
 * the schema, which accepts the same and words the error.
 */
export const FAST_PAYLOADS: Partial<{ [K in keyof Payloads]: (value: unknown) => Payloads[K] | undefined }> = {
  response_head(value) {
    if (typeof value !== "object" || value === null) return undefined;
    const { status, status_text, headers, body_channel } = value as Record<string, unknown>;
    if (typeof status !== "number" || !Number.isInteger(status) || status < 100 || status > 599) return undefined;
    if (status_text !== undefined && !isString(status_text, 0, MAX_STATUS_TEXT_CHARS)) return undefined;
    if (!isHeaderList(headers)) return undefined;
    if (body_channel !== undefined && body_channel !== true) return undefined;
    const head = status_text === undefined ? { status, headers } : { status, status_text, headers };
    return body_channel === undefined ? head : { ...head, body_channel };
  },
  request_head(value) {
    if (typeof value !== "object" || value === null) return undefined;
    const { tunnel_id, method, target, headers, client_addr, scheme, upgrade, decisions } = value as Record<string, unknown>;
    // carried decisions are checked by the schema (rarer, and each field bounded)
    if (decisions !== undefined) return undefined;
    if (typeof tunnel_id !== "string" || !isString(method, 1, MAX_METHOD_CHARS) || !isString(target, 1, MAX_TARGET_CHARS) || !isHeaderList(headers))
      return undefined;
    if (!isString(client_addr, 0, MAX_CLIENT_ADDR_CHARS) || !isString(scheme, 0, MAX_SCHEME_CHARS) || (upgrade !== undefined && upgrade !== "websocket"))
      return undefined;
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
  | ({ type: "tunnel_stopped" } & Payloads["tunnel_stopped"])
  | ({ type: "edge_decision" } & Payloads["edge_decision"]);

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

/** A frame whose payload is raw bytes after a fixed part: encoded in place, straight into a message. */
export type BinaryFrame = FrameOf<"data"> | FrameOf<"end"> | FrameOf<"window"> | FrameOf<"ws_message">;

export function isBinaryFrame(frame: Frame): frame is BinaryFrame {
  return frame.type === "data" || frame.type === "end" || frame.type === "window" || frame.type === "ws_message";
}
