import { describe, expect, it } from "vitest";
import { firstDifference } from "../shared/first-difference.ts";

describe("firstDifference, the byte comparison the body tests assert with", () => {
  const bytes = (...values: number[]) => new Uint8Array(values);

  it("is -1 for the same bytes, empty ones included", () => {
    expect(firstDifference(bytes(1, 2, 3), bytes(1, 2, 3))).toBe(-1);
    expect(firstDifference(bytes(), bytes())).toBe(-1);
  });

  it("names the first index that differs, wherever it is", () => {
    expect(firstDifference(bytes(9, 2, 3), bytes(1, 2, 3))).toBe(0);
    expect(firstDifference(bytes(1, 2, 9), bytes(1, 2, 3))).toBe(2);
    const big = new Uint8Array(2 * 1024 * 1024).map((_, i) => i % 251);
    const changed = big.slice();
    changed[big.length - 1] ^= 1;
    expect(firstDifference(changed, big)).toBe(big.length - 1);
  });

  it("is the shorter length when one is the start of the other", () => {
    expect(firstDifference(bytes(1, 2), bytes(1, 2, 3))).toBe(2);
    expect(firstDifference(bytes(1, 2, 3), bytes(1, 2))).toBe(2);
  });
});
