import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BucketTable, type BucketRow, type RowStore, type SeedRow, type TakeRequest } from "../../../src/limiter/bucket-table.ts";
import { emptyWindow, take, type WindowState } from "../../../src/limiter/sliding-window.ts";
import { maxInAnyWindow } from "../support/sliding-log.ts";

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

/** Decides a batch and writes it at once, as an object does when no other call shares its commit. */
function takeAll(table: BucketTable, requests: readonly TakeRequest[], now: number) {
  const { decisions } = table.decide(requests, now);
  return { decisions, earliestWritten: table.flush() };
}

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
          const { decisions } = takeAll(table, requests, now);
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
    const table = new BucketTable({
      ...store,
      write: (id, row, expires) => {
        writes.push(id);
        store.write(id, row, expires);
      },
    });
    const request = (id: string): TakeRequest => ({ id, spec: { capacity: 2, windowMs: 1_000 }, want: 1, leaseMs: 0, forRequest: true });
    const { earliestWritten } = takeAll(table, [request("a"), request("a"), request("b")], 5_000);
    expect(writes).toEqual(["a", "b"]);
    expect(earliestWritten).toBe(6_000);
    writes.length = 0;
    const rejected = takeAll(table, [request("a")], 5_500);
    expect(rejected.decisions[0]!.allowed).toBe(false);
    expect(writes).toEqual([]);
    expect(rejected.earliestWritten).toBeUndefined();
  });

  it("evicts only buckets whose every admission has left the window", () => {
    const { rows, store } = mapStore();
    const table = new BucketTable(store);
    const request = (id: string, windowMs: number): TakeRequest => ({ id, spec: { capacity: 2, windowMs }, want: 1, leaseMs: 0, forRequest: true });
    takeAll(table, [request("short", 1_000), request("long", 60_000)], 10_000);
    expect(table.evict(10_999)).toBe(0);
    expect(table.evict(11_000)).toBe(1);
    expect([...rows.keys()]).toEqual(["long"]);
    expect(table.cachedCount).toBe(1);
  });

  it("decides batches written together (group commit) exactly as batches written one by one, and drops a failed write's decisions", () => {
    fc.assert(
      fc.property(
        schedules,
        fc.array(fc.constantFrom("flush", "wait", "fail"), { minLength: 1, maxLength: 120 }),
        fc.integer({ min: 1, max: 4 }),
        (batches, after, maxCached) => {
          const { rows, store } = mapStore();
          let failNext = false;
          const failing: RowStore = {
            ...store,
            write: (id, row, expires) => {
              if (failNext) throw new Error("disk full");
              store.write(id, row, expires);
            },
          };
          const table = new BucketTable(failing, maxCached);
          /** What storage holds, and what the table decided since (not yet written). */
          let stored = new Map<string, WindowState>();
          let unwritten = new Map<string, WindowState>();
          let now = 1_700_000_000_000;
          batches.forEach((batch, index) => {
            now += batch.gap;
            const requests = batch.takes.map(({ bucket, want }): TakeRequest => ({ id: `b${bucket}`, spec, want, leaseMs: 0, forRequest: true }));
            const { decisions, changed } = table.decide(requests, now);
            let anyGranted = false;
            requests.forEach((request, at) => {
              const expected = take(unwritten.get(request.id) ?? stored.get(request.id) ?? emptyWindow, now, spec, request.want, 0);
              unwritten.set(request.id, expected.state);
              expect(decisions[at]).toEqual(expected.decision);
              anyGranted ||= expected.decision.granted > 0;
            });
            expect(changed).toBe(anyGranted);
            const step = after[index % after.length];
            if (step === "wait") return;
            failNext = step === "fail" && table.pendingCount > 0;
            if (failNext) {
              expect(() => table.flush()).toThrow("disk full");
              failNext = false;
              // Storage may hold part of the batch (the transaction's rollback is the object's; a Map has none):
              // what it holds now is the truth the table goes back to.
              stored = new Map([...rows].map(([id, row]) => [id, (JSON.parse(row.text) as SeedRow).state]));
            } else {
              table.flush();
              stored = new Map([...stored, ...unwritten]);
            }
            unwritten = new Map();
            expect(table.pendingCount).toBe(0);
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});
