import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BucketTable, type BucketRow, type RowStore, type TakeRequest } from "../../src/limiter/bucket-table.ts";
import { emptyWindow, take, type WindowState } from "../../src/limiter/sliding-window.ts";
import { maxInAnyWindow } from "./support/sliding-log.ts";

/** Rows in a Map, through a JSON round trip as the object's table stores them. */
function mapStore() {
  const rows = new Map<string, { text: string; expires: number }>();
  const store: RowStore = {
    read: (id) => {
      const row = rows.get(id);
      return row ? (JSON.parse(row.text) as BucketRow) : undefined;
    },
    write: (id, row, expires) => void rows.set(id, { text: JSON.stringify(row), expires }),
    remove: (id) => void rows.delete(id),
    removeExpired: (now) => {
      const removed = [...rows].filter(([, row]) => row.expires <= now).map(([id]) => id);
      for (const id of removed) rows.delete(id);
      return removed;
    },
    earliestExpiry: () => (rows.size === 0 ? undefined : Math.min(...[...rows.values()].map((row) => row.expires))),
  };
  return { rows, store };
}

const spec = { capacity: 5, windowMs: 10_000 };

/** A schedule of batches: each a time step and takes over a few buckets. */
const schedules = fc.array(
  fc.record({
    gap: fc.integer({ min: 0, max: 4_000 }),
    takes: fc.array(fc.record({ bucket: fc.integer({ min: 0, max: 5 }), want: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 6 }),
    evict: fc.boolean(),
  }),
  { minLength: 1, maxLength: 120 },
);

describe("BucketTable", () => {
  it("decides exactly as one window per bucket would, whatever it forgets, evicts or reads back", () => {
    fc.assert(
      fc.property(schedules, fc.integer({ min: 1, max: 4 }), (batches, maxCached) => {
        const { store } = mapStore();
        const table = new BucketTable(store, maxCached);
        const reference = new Map<number, WindowState>();
        const admittedAt = new Map<number, number[]>();
        let now = 1_700_000_000_000;
        for (const batch of batches) {
          now += batch.gap;
          if (batch.evict) table.evict(now);
          const requests = batch.takes.map(({ bucket, want }): TakeRequest => ({ id: `b${bucket}`, spec, want, leaseMs: 0, forRequest: true }));
          const { decisions } = table.takeAll(requests, now);
          batch.takes.forEach(({ bucket, want }, index) => {
            const expected = take(reference.get(bucket) ?? emptyWindow, now, spec, want, 0);
            reference.set(bucket, expected.state);
            expect(decisions[index]).toEqual(expected.decision);
            if (expected.decision.allowed) admittedAt.set(bucket, [...(admittedAt.get(bucket) ?? []), now]);
          });
        }
        for (const times of admittedAt.values()) expect(maxInAnyWindow(times, spec.windowMs)).toBeLessThanOrEqual(spec.capacity);
        expect(table.cachedCount).toBeLessThanOrEqual(maxCached);
      }),
      { numRuns: 200 },
    );
  });

  it("writes a bucket touched several times in a batch once, and nothing for a rejected take", () => {
    const { store } = mapStore();
    const writes: string[] = [];
    const table = new BucketTable({ ...store, write: (id, row, expires) => (writes.push(id), store.write(id, row, expires)) });
    const request = (id: string): TakeRequest => ({ id, spec: { capacity: 2, windowMs: 1_000 }, want: 1, leaseMs: 0, forRequest: true });
    const { earliestWritten } = table.takeAll([request("a"), request("a"), request("b")], 5_000);
    expect(writes).toEqual(["a", "b"]);
    expect(earliestWritten).toBe(6_000);
    writes.length = 0;
    const rejected = table.takeAll([request("a")], 5_500);
    expect(rejected.decisions[0]!.allowed).toBe(false);
    expect(writes).toEqual([]);
    expect(rejected.earliestWritten).toBeUndefined();
  });

  it("evicts only buckets whose every admission has left the window", () => {
    const { rows, store } = mapStore();
    const table = new BucketTable(store);
    const request = (id: string, windowMs: number): TakeRequest => ({ id, spec: { capacity: 2, windowMs }, want: 1, leaseMs: 0, forRequest: true });
    table.takeAll([request("short", 1_000), request("long", 60_000)], 10_000);
    expect(table.evict(10_999)).toBe(0);
    expect(table.evict(11_000)).toBe(1);
    expect([...rows.keys()]).toEqual(["long"]);
    expect(table.cachedCount).toBe(1);
  });
});
