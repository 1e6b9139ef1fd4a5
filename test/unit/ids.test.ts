import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BASE62, encodeBase62, isId, newId } from "../../src/ids.ts";

/** The plain definition: the 160-bit number in base62 with BigInt, left-padded to 27 digits. */
function referenceBody(millis: number, random: Uint8Array): string {
  let value = BigInt(millis);
  for (const byte of random) value = (value << 8n) | BigInt(byte);
  let body = "";
  while (value > 0n) {
    body = BASE62[Number(value % 62n)] + body;
    value /= 62n;
  }
  return body.padStart(27, "0");
}

describe("ids", () => {
  it("encodes time and random bits exactly as the 160-bit number in base62", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), fc.uint8Array({ minLength: 14, maxLength: 14 }), (millis, random) => {
        random[0] &= 0x7f;
        expect(encodeBase62(millis, random)).toBe(referenceBody(millis, random));
      }),
    );
  });

  it("makes well-formed ids that sort in creation order, also many within one millisecond", () => {
    const ids: string[] = [];
    for (let ms = 1_700_000_000_000; ms < 1_700_000_000_005; ms++) for (let i = 0; i < 500; i++) ids.push(newId("op", ms));
    for (const id of ids) expect(isId(id, "op")).toBe(true);
    for (let i = 1; i < ids.length; i++) expect(ids[i - 1] < ids[i]).toBe(true);
  });

  it("within one millisecond each id is the previous number plus one", () => {
    const ms = 1_800_000_000_000;
    const first = newId("x", ms).slice(2);
    const second = newId("x", ms).slice(2);
    const toBig = (body: string) => [...body].reduce((value, digit) => value * 62n + BigInt(BASE62.indexOf(digit)), 0n);
    expect(toBig(second) - toBig(first)).toBe(1n);
  });

  it("ids of new milliseconds take fresh random bits, also past the batch one getRandomValues call draws", () => {
    const toBig = (body: string) => [...body].reduce((value, digit) => value * 62n + BigInt(BASE62.indexOf(digit)), 0n);
    const randomParts = new Set<bigint>();
    const start = 2_000_000_000_000;
    for (let ms = start; ms < start + 300; ms++) {
      const value = toBig(newId("x", ms).slice(2));
      expect(value >> 112n).toBe(BigInt(ms));
      randomParts.add(value & ((1n << 112n) - 1n));
    }
    expect(randomParts.size).toBe(300);
  });

  it("a clock that goes back keeps ids increasing", () => {
    const later = newId("x", 1_900_000_000_000);
    expect(newId("x", 1_899_999_999_000) > later).toBe(true);
  });
});
