import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { closeReason, MAX_CLOSE_REASON_BYTES } from "../../src/close-reason.ts";
import { decodeFrames, encodeFrame } from "../../src/relay/index.ts";

const bytes = (text: string) => new TextEncoder().encode(text).byteLength;

describe("WebSocket close reasons", () => {
  it("any reason becomes at most 123 bytes, cut on a character boundary, unchanged when it fits", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), (reason) => {
        const cut = closeReason(reason);
        expect(bytes(cut)).toBeLessThanOrEqual(MAX_CLOSE_REASON_BYTES);
        if (bytes(reason) <= MAX_CLOSE_REASON_BYTES) expect(cut).toBe(reason);
        else {
          expect(cut.endsWith("…")).toBe(true);
          expect(reason.startsWith(cut.slice(0, -1))).toBe(true);
          expect(new TextDecoder("utf-8", { fatal: true }).decode(new TextEncoder().encode(cut))).toBe(cut);
        }
      }),
    );
  });

  it("120 two-byte characters (which .slice(0, 120) kept whole, 240 bytes) are cut to fit", () => {
    const cut = closeReason("é".repeat(120));
    expect(cut).toBe(`${"é".repeat(60)}…`);
    expect(bytes(cut)).toBe(123);
  });

  it("the tunnel protocol refuses a ws_close whose reason is over 123 bytes, counting bytes", () => {
    const frame = encodeFrame({ type: "ws_close", stream: 1, code: 1000, reason: "é".repeat(62) });
    const decoded = decodeFrames(frame);
    expect(decoded.ok).toBe(false);
    expect(!decoded.ok && decoded.error).toContain("must be at most 123 bytes of UTF-8");
    expect(decodeFrames(encodeFrame({ type: "ws_close", stream: 1, code: 1000, reason: "é".repeat(61) })).ok).toBe(true);
  });
});
