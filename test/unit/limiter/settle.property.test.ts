/**
 * Costs settled from the response, against exact logs (fast-check): a bucket of one to three windows (sliding
 * and calendar) takes requests that reserve an estimate, and their settles come later, up or down, some twice,
 * some never. The log replaces an admission's cost when its settle is applied. Settles are applied exactly once
 * (a duplicate finds nothing), every open reservation's first settle is applied, no admission takes any window
 * past its capacity by the log as settled so far, a refusal is never more cautious than the sub-windows allow,
 * and calendar periods count exactly their log.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeRow, encodeRow } from "../../../src/limiter/bucket-row.ts";
import { type BucketRow, BucketTable, type RowStore } from "../../../src/limiter/bucket-table.ts";
import { CALENDAR_PERIODS, periodAt } from "../../../src/limiter/calendar-period.ts";
import { MAX_RESERVATIONS, RESERVATION_TTL_MS } from "../../../src/limiter/settle.ts";
import { subWindowLength } from "../../../src/limiter/sliding-window.ts";
import { isCalendar, windowKey, type WindowRule } from "../../../src/limiter/window-rules.ts";

const T0 = 1_700_000_000_000;

/** Rows as the object's table stores them: through encodeRow and decodeRow. */
function encodedStore(): RowStore {
  const rows = new Map<string, { windowMs: number; text: string; expires: number }>();
  return {
    read: (id) => {
      const row = rows.get(id);
      return row ? decodeRow(row.windowMs, row.text) : undefined;
    },
    write: (id, row: BucketRow, expires) => void rows.set(id, { ...encodeRow(row), expires }),
    remove: (id) => void rows.delete(id),
    removeExpired: (now) => {
      const removed = [...rows].filter(([, row]) => row.expires <= now).map(([id]) => id);
      for (const id of removed) rows.delete(id);
      return removed;
    },
    earliestExpiry: () => (rows.size === 0 ? undefined : Math.min(...[...rows.values()].map((row) => row.expires))),
  };
}

/** One admitted request as the exact log has it: its time and its cost, the settled one once settled. */
interface Entry {
  readonly id: string;
  readonly at: number;
  cost: number;
  settled: boolean;
}

/** What the log counts in a rule's window at `now`, `slackMs` further back for sliding windows. */
function logged(log: readonly Entry[], rule: WindowRule, now: number, slackMs = 0): number {
  let sum = 0;
  if (isCalendar(rule)) {
    const { start } = periodAt(now, rule.period, rule.offsetMinutes);
    for (const entry of log) if (periodAt(entry.at, rule.period, rule.offsetMinutes).start === start) sum += entry.cost;
  } else for (const entry of log) if (entry.at > now - rule.windowMs - slackMs && entry.at <= now) sum += entry.cost;
  return sum;
}

/** Restated from the documented rule: a reservation is open until no window counts it, and at most an hour. */
function stillOpen(entry: Entry, rules: readonly WindowRule[], now: number): boolean {
  const counted = rules.map((rule) => (isCalendar(rule) ? periodAt(entry.at, rule.period, rule.offsetMinutes).end : entry.at + rule.windowMs));
  return now < Math.min(Math.max(...counted), entry.at + RESERVATION_TTL_MS);
}

const slidingRule = fc.record({
  capacity: fc.integer({ min: 1, max: 40 }),
  windowMs: fc.oneof(
    fc.constantFrom(1_000, 60_000),
    fc.integer({ min: 1, max: 600 }).map((s) => s * 1_000),
  ),
});
const calendarRule = fc.record({
  capacity: fc.integer({ min: 1, max: 60 }),
  period: fc.constantFrom(...CALENDAR_PERIODS),
  offsetMinutes: fc.constantFrom(0, 60, -300, 330),
});
const rules = fc
  .array(fc.oneof(slidingRule, calendarRule) as fc.Arbitrary<WindowRule>, { minLength: 1, maxLength: 3 })
  .map((list) => list.filter((rule, i) => list.findIndex((other) => windowKey(other) === windowKey(rule)) === i));

const gap = fc.oneof(
  { weight: 5, arbitrary: fc.integer({ min: 0, max: 2_000 }) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 120_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 * 3_600_000 }) },
);
const step = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("take" as const), gap, cost: fc.integer({ min: 0, max: 8 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("settle" as const),
      gap,
      pick: fc.nat(),
      // Down to nothing, up past any capacity.
      cost: fc.oneof(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 30, max: 120 })),
      // Sent twice in one call (a retry that raced its original), or once.
      twice: fc.boolean(),
    }),
  },
);

describe("costs settled from the response", () => {
  it("apply each settle exactly once, in the windows the request was admitted in, and never admit past capacity", () => {
    fc.assert(
      fc.property(
        rules,
        fc.array(step, { minLength: 1, maxLength: 120 }),
        fc.integer({ min: 0, max: 400 * 86_400_000 }),
        fc.integer({ min: 1, max: 3 }),
        (list, steps, offset, cached) => {
          const table = new BucketTable(encodedStore(), cached);
          const log: Entry[] = [];
          let now = T0 + offset;
          let ids = 0;
          for (const next of steps) {
            now += next.gap;
            if (next.kind === "take") {
              const id = `r${ids++}`;
              const [decision] = table.decide([{ id: "b", windows: list, cost: next.cost, want: 1, leaseMs: 0, forRequest: true, reserve: id }], now).decisions;
              table.flush();
              const need = Math.max(1, next.cost);
              if (decision!.allowed) {
                for (const rule of list) expect(logged(log, rule, now) + need).toBeLessThanOrEqual(rule.capacity);
                log.push({ id, at: now, cost: next.cost, settled: false });
              } else {
                // Refused by a window that holds too much even counting a sub-window further back (sliding), or exactly (calendar).
                const full = list.some((rule) => logged(log, rule, now, isCalendar(rule) ? 0 : subWindowLength(rule.windowMs)) + need > rule.capacity);
                expect(full).toBe(true);
              }
              continue;
            }
            if (log.length === 0) continue;
            const entry = log[next.pick % log.length]!;
            const request = { id: "b", reservation: entry.id, cost: next.cost };
            const expected = !entry.settled && stillOpen(entry, list, now);
            const { applied } = table.settle(next.twice ? [request, request] : [request], now);
            table.flush();
            expect(applied).toEqual(next.twice ? [expected, false] : [expected]);
            if (expected) {
              entry.cost = next.cost;
              entry.settled = true;
            }
            // Settling again later changes nothing either.
            expect(table.settle([request], now).applied).toEqual([false]);
          }
          // Calendar windows count exactly their log, settles included: what is left is capacity minus the log.
          const [check] = table.decide([{ id: "b", windows: list, cost: 0, want: 1, leaseMs: 0, forRequest: true }], now).decisions;
          list.forEach((rule, i) => {
            if (isCalendar(rule)) expect(check!.windows![i]!.remaining).toBe(Math.max(0, rule.capacity - logged(log, rule, now)));
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("keeps at most 256 open reservations a bucket: the oldest beyond them keep their estimate", () => {
    const table = new BucketTable(encodedStore());
    const windows = [{ capacity: 1_000_000, windowMs: 60_000 }];
    const now = T0;
    const count = MAX_RESERVATIONS + 44;
    for (let i = 0; i < count; i++) table.decide([{ id: "b", windows, cost: 10, want: 1, leaseMs: 0, forRequest: true, reserve: `r${i}` }], now);
    table.flush();
    const settled = table.settle(
      Array.from({ length: count }, (_, i) => ({ id: "b", reservation: `r${i}`, cost: 0 })),
      now,
    ).applied;
    expect(settled.filter((applied) => !applied)).toHaveLength(44);
    expect(settled.slice(44).every(Boolean)).toBe(true);
    // 44 estimates of 10 stay counted.
    const [check] = table.decide([{ id: "b", windows, cost: 0, want: 1, leaseMs: 0, forRequest: true }], now).decisions;
    expect(check!.remaining).toBe(1_000_000 - 440);
  });
});
