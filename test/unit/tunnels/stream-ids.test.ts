import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_STREAM_ID } from "../../../src/relay/index.ts";
import { STREAM_ID_BLOCK, StreamIds, type ReservationStore } from "../../../src/tunnels/stream-ids.ts";

function memoryStore(initial?: number): ReservationStore & { writes: number[] } {
  let value = initial;
  const writes: number[] = [];
  return {
    writes,
    read: () => value,
    write: (reservedUpTo) => {
      value = reservedUpTo;
      writes.push(reservedUpTo);
    },
  };
}

describe("stream ids", () => {
  it("count up from 1 and reserve a block in storage once per STREAM_ID_BLOCK ids", () => {
    const store = memoryStore();
    const ids = new StreamIds(store, () => false);
    const taken = Array.from({ length: STREAM_ID_BLOCK + 1 }, () => ids.allocate());
    expect(taken.slice(0, 3)).toEqual([1, 2, 3]);
    expect(store.writes).toEqual([STREAM_ID_BLOCK, 2 * STREAM_ID_BLOCK]);
  });

  it("a rebuilt allocator (the object hibernated) starts after everything handed out before", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 * STREAM_ID_BLOCK + 1 }), { minLength: 1, maxLength: 4 }), (lifetimes) => {
        const store = memoryStore();
        const seen = new Set<number>();
        for (const count of lifetimes) {
          const ids = new StreamIds(store, () => false);
          for (let i = 0; i < count; i++) {
            const id = ids.allocate();
            expect(seen.has(id)).toBe(false);
            seen.add(id);
          }
        }
      }),
      { numRuns: 40 },
    );
  });

  it("skip ids a live stream or socket still holds", () => {
    const held = new Set([1, 2, 4]);
    const ids = new StreamIds(memoryStore(), (id) => held.has(id));
    expect([ids.allocate(), ids.allocate()]).toEqual([3, 5]);
  });

  it("wrap around after the largest id, still skipping held ones", () => {
    const store = memoryStore(MAX_STREAM_ID - 1);
    const ids = new StreamIds(store, (id) => id === 1);
    expect([ids.allocate(), ids.allocate(), ids.allocate()]).toEqual([MAX_STREAM_ID, 2, 3]);
    expect(store.read()).toBe(STREAM_ID_BLOCK);
  });
});
