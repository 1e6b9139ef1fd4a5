import { describe, expect, it } from "vitest";
import { decodeFrames, decodeMessage, encodeFrame } from "../../../src/relay/frame-codec.ts";
import type { Frame } from "../../../src/relay/frames.ts";
import { MAX_REQUEST_HEAD_BYTES } from "../../../src/relay/head-bounds.ts";

const head = (stream: number, headers: Array<[string, string]> = []): Frame => ({
  type: "request_head",
  stream,
  tunnel_id: "tn_1",
  method: "GET",
  target: "/",
  headers,
  client_addr: "127.0.0.1",
  scheme: "http",
});
const end = (stream: number): Frame => ({ type: "end", stream, count: 0 });
const message = (...frames: Frame[]) => Buffer.concat(frames.map((frame) => encodeFrame(frame)));
const tooLong: Array<[string, string]> = [["x-big", "v".repeat(16385)]];

describe("decoding a message whose stream frames do not all decode", () => {
  it("keeps the other streams' frames and names the stream whose frame did not decode", () => {
    const decoded = decodeMessage(message(head(1), head(2, tooLong), end(1), head(3)));
    expect(decoded.ok && decoded.frames.map((frame) => [frame.type, "stream" in frame && frame.stream])).toEqual([
      ["request_head", 1],
      ["end", 1],
      ["request_head", 3],
    ]);
    expect(decoded.ok && decoded.undecodable).toEqual([
      { stream: 2, type: "request_head", error: "request_head frame: headers.0.1: Too big: expected string to have <=16384 characters" },
    ]);
  });

  it("drops the stream's later frames in the message and keeps its earlier ones", () => {
    const decoded = decodeMessage(Buffer.concat([encodeFrame(head(2)), dataWithoutSeq(2), encodeFrame(end(2))]));
    expect(decoded.ok && decoded.frames.map((frame) => frame.type)).toEqual(["request_head"]);
    expect(decoded.ok && decoded.undecodable).toEqual([{ stream: 2, type: "data", error: "data frame must start with a 4-byte sequence number" }]);
  });

  it("takes a request head of MAX_REQUEST_HEAD_BYTES and refuses one byte more", () => {
    /** A head of exactly `bytes` bytes encoded: full-size values, and the last one sized to fit. */
    const filler = (bytes: number) => {
      const headers: Array<[string, string]> = Array.from({ length: 63 }, (_, i) => [`x-${i}`, "v".repeat(16384)]);
      const last: [string, string] = ["x-last", ""];
      last[1] = "v".repeat(bytes - encodeFrame(head(1, [...headers, last])).byteLength);
      return head(1, [...headers, last]);
    };
    const largest = encodeFrame(filler(MAX_REQUEST_HEAD_BYTES));
    expect(largest.byteLength).toBe(MAX_REQUEST_HEAD_BYTES);
    expect(decodeMessage(largest)).toMatchObject({ ok: true, undecodable: [] });
    const past = encodeFrame(filler(MAX_REQUEST_HEAD_BYTES + 1));
    expect(past.byteLength).toBe(MAX_REQUEST_HEAD_BYTES + 1);
    expect(decodeMessage(past)).toMatchObject({
      ok: true,
      frames: [],
      undecodable: [{ stream: 1, error: `request_head frame of ${MAX_REQUEST_HEAD_BYTES + 1} bytes exceeds ${MAX_REQUEST_HEAD_BYTES}` }],
    });
  });

  it("refuses the whole message when a session frame's payload is broken, or the framing is", () => {
    const hello = encodeFrame({ type: "hello", agent_version: "v".repeat(65) });
    expect(decodeMessage(Buffer.concat([encodeFrame(head(1)), hello]))).toEqual({
      ok: false,
      error: "hello frame: agent_version: Too big: expected string to have <=64 characters",
    });
    expect(decodeMessage(encodeFrame(head(1)).subarray(0, 20))).toMatchObject({ ok: false, error: expect.stringContaining("declares") });
  });

  it("decodeFrames still refuses a message with any frame it cannot decode", () => {
    expect(decodeFrames(message(head(1), head(2, tooLong)))).toEqual({ ok: false, error: expect.stringContaining("headers.0.1") });
  });
});

/** A data frame of stream `stream` whose payload is too short for its sequence number. */
function dataWithoutSeq(stream: number): Uint8Array {
  const bytes = new Uint8Array(12);
  bytes[0] = 1;
  bytes[1] = 18;
  new DataView(bytes.buffer).setUint32(2, stream);
  new DataView(bytes.buffer).setUint32(6, 2);
  return bytes;
}
