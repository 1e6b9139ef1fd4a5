/** Frames to bytes and back (the layout is in protocol.ts); every frame read is validated. */

import { MAX_REQUEST_HEAD_BYTES } from "./head-bounds.ts";
import { FAST_PAYLOADS, isBinaryFrame, payloadSchemas, type BinaryFrame, type Frame, type FrameOf } from "./frames.ts";
import {
  FRAME_HEADER_BYTES as HEADER_BYTES,
  FRAME_TYPES,
  MAX_DATA_CHUNK,
  MAX_STREAM_ID,
  MAX_WS_MESSAGE,
  PROTOCOL_VERSION,
  type FrameTypeName,
} from "./protocol.ts";

const TYPE_NAMES = new Map<number, FrameTypeName>(Object.entries(FRAME_TYPES).map(([name, code]) => [code, name as FrameTypeName]));

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
 * A stream frame whose framing is sound (header, type, length) but whose payload this end does not take: its
 * stream is reset, and the session and the message's other streams go on.
 */
export interface UndecodableFrame {
  readonly stream: number;
  readonly type: FrameTypeName;
  readonly error: string;
}

/**
 * `frames`: what decoded, in order; `undecodable`: stream frames that did not (a stream's later frames in the
 * message are dropped with it, the earlier ones kept). Not ok only when the message cannot be split into frames,
 * or a session frame's payload is broken: nothing of it is used, and the session must close.
 */
export type DecodeMessageResult = { ok: true; frames: Frame[]; undecodable: UndecodableFrame[] } | { ok: false; error: string };

/** Decodes and validates the frames of one WebSocket message (see DecodeMessageResult). */
export function decodeMessage(input: ArrayBuffer | ArrayBufferView, maxDataChunk: number = MAX_DATA_CHUNK): DecodeMessageResult {
  // ArrayBuffer.isView rather than instanceof: buffers may come from another realm (a test runner, a worker).
  const bytes = ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frames: Frame[] = [];
  const undecodable: UndecodableFrame[] = [];
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
    offset += HEADER_BYTES + length;
    if (undecodable.length > 0 && undecodable.some((each) => each.stream === stream)) continue;
    const decoded = decodePayload(type, stream, bytes.subarray(offset - length, offset), maxDataChunk);
    if (decoded.ok) frames.push(decoded.frame);
    else if (isSessionType(type)) return fail(decoded.error);
    else undecodable.push({ stream, type, error: decoded.error });
  } while (offset < bytes.byteLength);
  return { ok: true, frames, undecodable };
}

/**
 * Decodes and validates the frames of one WebSocket message; anything malformed comes back as
 * `ok: false` with the reason (and nothing of the message is used).
 */
export function decodeFrames(input: ArrayBuffer | ArrayBufferView, maxDataChunk: number = MAX_DATA_CHUNK): DecodeManyResult {
  const decoded = decodeMessage(input, maxDataChunk);
  if (!decoded.ok) return decoded;
  if (decoded.undecodable.length > 0) return fail(decoded.undecodable[0].error);
  return { ok: true, frames: decoded.frames };
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
      if (type === "request_head" && HEADER_BYTES + payload.byteLength > MAX_REQUEST_HEAD_BYTES)
        return fail(`request_head frame of ${HEADER_BYTES + payload.byteLength} bytes exceeds ${MAX_REQUEST_HEAD_BYTES}`);
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
