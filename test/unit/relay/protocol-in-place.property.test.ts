import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrameOutbox } from "../../../src/relay/framing.ts";
import { DATA_FRAME_HEADROOM, decodeFrames, encodeDataInPlace, encodeFrame, MAX_DATA_CHUNK, type FrameOf } from "../../../src/relay/index.ts";

const body = fc.uint8Array({ maxLength: 2048 });
const stream = fc.integer({ min: 1, max: 0xffffffff });
const seq = fc.integer({ min: 0, max: 0xffffffff });

/** A body read into a buffer with room for the frame's header before it, as the edge reads request bodies. */
function withHeadroom(bytes: Uint8Array, extra = 0): Uint8Array {
  const buffer = new Uint8Array(extra + DATA_FRAME_HEADROOM + bytes.byteLength + 7).fill(0xee);
  const view = buffer.subarray(extra + DATA_FRAME_HEADROOM, extra + DATA_FRAME_HEADROOM + bytes.byteLength);
  view.set(bytes);
  return view;
}

describe("protocol: data frames encoded in place", () => {
  it("are byte for byte what encodeFrame makes, and decode to the same frame", () => {
    fc.assert(
      fc.property(stream, seq, body, fc.nat(64), (id, n, bytes, extra) => {
        const frame: FrameOf<"data"> = { type: "data", stream: id, seq: n, bytes: withHeadroom(bytes, extra) };
        const encoded = encodeDataInPlace(frame);
        expect(encoded).toEqual(encodeFrame({ ...frame, bytes }));
        const decoded = decodeFrames(encoded);
        expect(decoded.ok && decoded.frames).toEqual([{ type: "data", stream: id, seq: n, bytes }]);
      }),
    );
  });

  it("refuse a body with no room for the header before it", () => {
    expect(() => encodeDataInPlace({ type: "data", stream: 1, seq: 0, bytes: new Uint8Array(MAX_DATA_CHUNK) })).toThrow(
      "a data frame's body at offset 0 leaves no room for its header",
    );
  });

  it("go out as they are when alone in a message, and copied among the other frames of a batch otherwise", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(body, fc.boolean()), { minLength: 1, maxLength: 5 }), (parts) => {
        const messages: Uint8Array[] = [];
        const outbox = new FrameOutbox(
          (message) => messages.push(message),
          () => undefined,
        );
        const frames = parts.map(([bytes, inPlace], i): FrameOf<"data"> => ({ type: "data", stream: 1, seq: i, bytes: inPlace ? withHeadroom(bytes) : bytes }));
        for (const [i, frame] of frames.entries()) {
          if (parts[i][1]) outbox.pushEncoded(encodeDataInPlace(frame));
          else outbox.push(frame);
        }
        outbox.flush();
        expect(messages).toHaveLength(1);
        const decoded = decodeFrames(messages[0]);
        expect(decoded.ok && decoded.frames).toEqual(parts.map(([bytes], i) => ({ type: "data", stream: 1, seq: i, bytes })));
        if (parts.length === 1 && parts[0][1]) expect(messages[0].buffer).toBe(frames[0].bytes.buffer);
      }),
    );
  });
});
