/**
 * Relay frames as every test project builds them (Node and workerd alike): a data frame, a body as data
 * frames and its end, a whole response, and several frames as one WebSocket message, as either end batches.
 */

import { encodeFrame, MAX_DATA_CHUNK, type Frame, type FrameOf } from "../../src/relay/index.ts";

const encoder = new TextEncoder();
const bytesOf = (body: Uint8Array | string): Uint8Array => (typeof body === "string" ? encoder.encode(body) : body);

/** Data frame `seq` of a stream; a number is that many bytes, each `seq % 251` (so reordering shows). */
export function dataFrame(stream: number, seq: number, body: Uint8Array | string | number): FrameOf<"data"> {
  const bytes = typeof body === "number" ? new Uint8Array(body).fill(seq % 251) : bytesOf(body);
  return { type: "data", stream, seq, bytes };
}

/** A body as data frames of up to `chunk` bytes, numbered from 0, then its end (an empty body: the end alone). */
export function bodyFrames(stream: number, body: Uint8Array | string, chunk: number = MAX_DATA_CHUNK): Array<FrameOf<"data"> | FrameOf<"end">> {
  const bytes = bytesOf(body);
  const frames: Array<FrameOf<"data"> | FrameOf<"end">> = [];
  for (let offset = 0; offset < bytes.byteLength; offset += chunk) frames.push(dataFrame(stream, frames.length, bytes.subarray(offset, offset + chunk)));
  frames.push({ type: "end", stream, count: frames.length });
  return frames;
}

/** A whole response: its head, its body in data frames of up to `chunk` bytes (default: one), and the end. */
export function responseFrames(
  stream: number,
  status: number,
  body: Uint8Array | string,
  headers: Array<[string, string]> = [],
  chunk: number = Number.POSITIVE_INFINITY,
): Frame[] {
  return [{ type: "response_head", stream, status, headers }, ...bodyFrames(stream, body, chunk)];
}

/** One WebSocket message holding `frames` back to back. */
export function message(frames: readonly Frame[]): Uint8Array {
  const parts = frames.map(encodeFrame);
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
