import { describe, expect, it } from "vitest";
import { freeBudget, makeRoom } from "../../src/bounded-map.ts";

describe("bounded maps", () => {
  it("makeRoom keeps at most the bound, dropping the oldest eighth at once", () => {
    const map = new Map<number, number>();
    for (let i = 0; i < 1_000; i++) {
      makeRoom(map, 64);
      map.set(i, i);
      expect(map.size).toBeLessThanOrEqual(64);
    }
    // The newest are kept, in order.
    expect([...map.keys()].at(-1)).toBe(999);
    expect([...map.keys()]).toEqual([...map.keys()].sort((a, b) => a - b));
    // A bound under 8 still drops one at a time.
    const small = new Map([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    makeRoom(small, 3);
    expect([...small.keys()]).toEqual([2, 3]);
  });

  it("makeRoom on a map already over its bound (a bound lowered) brings it under", () => {
    const map = new Map(Array.from({ length: 100 }, (_, i) => [i, i] as const));
    makeRoom(map, 16);
    expect(map.size).toBe(16 - 2);
    expect([...map.keys()][0]).toBe(86);
  });

  it("freeBudget forgets the oldest until the need fits with an eighth to spare", () => {
    const map = new Map<string, number>();
    let used = 0;
    const forget = (key: string) => {
      used -= map.get(key)!;
      map.delete(key);
    };
    for (let i = 0; i < 500; i++) {
      freeBudget(map, 10, 800, () => used, forget);
      map.set(`k${i}`, 10);
      used += 10;
      expect(used).toBeLessThanOrEqual(800);
    }
    expect(map.has("k499")).toBe(true);
    // A need larger than the limit empties the map and stops (the caller refuses to store it).
    freeBudget(map, 5_000, 800, () => used, forget);
    expect(map.size).toBe(0);
  });

  it("a flood of new keys starts a walk from the map's front once per eighth of the bound, not once per key", () => {
    // Each new iterator walks over the slots V8 keeps for deleted entries at the front: with one eviction per
    // insertion, 200,000 insertions into a map of 16,384 cost 8 µs each (26 times a batch's; docs/benchmark.md).
    const map = new Map<number, number>();
    let walks = 0;
    const keys = map.keys.bind(map);
    map.keys = () => {
      walks++;
      return keys();
    };
    for (let i = 0; i < 200_000; i++) {
      makeRoom(map, 16_384);
      map.set(i, i);
    }
    expect(map.size).toBeLessThanOrEqual(16_384);
    expect(walks).toBeLessThanOrEqual(Math.ceil((200_000 - 16_384) / (16_384 / 8)) + 1);
  });
});
