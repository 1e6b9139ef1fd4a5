/**
 * What the management API accepts as text (fast-check): strings must be well-formed Unicode and are counted in
 * code points; request bodies must be well-formed UTF-8, and the first ill-formed byte is located exactly.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { characterCount, NOT_WELL_FORMED_MESSAGE, text } from "../../../src/management/text.ts";
import { decodeUtf8, firstIllFormedOffset } from "../../../src/management/utf8.ts";

const encoder = new TextEncoder();
const fatal = (bytes: Uint8Array) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);
const decodes = (bytes: Uint8Array) => {
  try {
    fatal(bytes);
    return true;
  } catch {
    return false;
  }
};

/** Well-formed strings from the whole of Unicode, astral planes included. */
const wellFormed = fc.string({ unit: "binary" });
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));
/** A well-formed string with one unpaired surrogate put where it cannot pair up. */
const illFormed = fc.tuple(wellFormed, loneSurrogate, wellFormed).map(([before, lone, after]) => {
  const high = lone.charCodeAt(0) < 0xdc00;
  return `${before}${high ? "" : "x"}${lone}${high ? "x" : ""}${after}`;
});

/** Mostly-valid UTF-8 with random bytes spliced in, so failures sit anywhere, including mid-sequence. */
const bytesWithErrors = fc
  .tuple(wellFormed, fc.array(fc.tuple(fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 4 })), { maxLength: 3 }))
  .map(([base, splices]) => {
    let bytes = Array.from(encoder.encode(base));
    for (const [at, insert] of splices) {
      const i = bytes.length === 0 ? 0 : at % (bytes.length + 1);
      bytes = [...bytes.slice(0, i), ...insert, ...bytes.slice(i)];
    }
    return new Uint8Array(bytes);
  });

describe("text(): strings the API accepts", () => {
  it("any string with an unpaired surrogate is refused with the well-formedness message, whatever its length", () => {
    const schema = text({ length: { min: 1, max: 255 } });
    fc.assert(
      fc.property(illFormed, (value) => {
        const result = schema.safeParse(value);
        expect(result.success).toBe(false);
        expect(result.error?.issues.map((issue) => issue.message)).toEqual([NOT_WELL_FORMED_MESSAGE]);
      }),
    );
  });

  it("a well-formed string is accepted exactly when its code points are within the bounds, and parses to itself", () => {
    fc.assert(
      fc.property(wellFormed, fc.integer({ min: 0, max: 12 }), (value, max) => {
        const result = text({ length: { min: 1, max } }).safeParse(value);
        const count = [...value].length;
        expect(characterCount(value)).toBe(count);
        expect(result.success).toBe(count >= 1 && count <= max);
        if (result.success) expect(result.data).toBe(value);
        else expect(result.error.issues.map((issue) => issue.message)).toEqual([`must be 1 to ${max} characters`]);
      }),
    );
  });

  it("a four-byte emoji counts as one character: 255 fit a field of 255, 256 do not", () => {
    const schema = text({ length: { min: 1, max: 255 } });
    expect(characterCount("🚀")).toBe(1);
    expect(schema.safeParse("🚀".repeat(255)).success).toBe(true);
    expect(schema.safeParse("🚀".repeat(256)).success).toBe(false);
  });
});

describe("strict UTF-8", () => {
  it("firstIllFormedOffset is -1 exactly when the platform's fatal decoder accepts the bytes", () => {
    fc.assert(
      fc.property(fc.oneof(bytesWithErrors, fc.uint8Array({ maxLength: 12 })), (bytes) => {
        expect(firstIllFormedOffset(bytes) === -1).toBe(decodes(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it("the offset is the first error: the bytes before it decode, the sequence starting at it never does", () => {
    fc.assert(
      fc.property(bytesWithErrors, (bytes) => {
        const offset = firstIllFormedOffset(bytes);
        fc.pre(offset !== -1);
        expect(decodes(bytes.subarray(0, offset))).toBe(true);
        // The ill-formed sequence starting at `offset`, followed by ASCII, cannot be completed into text.
        expect(decodes(new Uint8Array([...bytes.subarray(offset, offset + 4), 0x41]))).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it("decodeUtf8 returns the text of well-formed bytes (without a leading BOM) and the offset of ill-formed ones", () => {
    expect(decodeUtf8(encoder.encode('\ufeff{"a":"🚀"}'))).toEqual({ ok: true, text: '{"a":"🚀"}' });
    expect(decodeUtf8(new Uint8Array([0x7b, 0xff, 0x7d]))).toEqual({ ok: false, offset: 1 });
    expect(decodeUtf8(new Uint8Array([0x61, 0xed, 0xa0, 0x80]))).toEqual({ ok: false, offset: 1 });
    expect(decodeUtf8(new Uint8Array([0x61, 0x62, 0xf0, 0x9f, 0x9a]))).toEqual({ ok: false, offset: 2 });
  });
});
