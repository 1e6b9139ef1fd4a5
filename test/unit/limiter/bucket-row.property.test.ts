/**
 * A bucket row under tier switches (fast-check): each take picks one of several rule lists sharing windows, with a
 * cost, and the row goes through its table text after every take. Each admission fits every window of the rules it
 * was decided by, counting what other tiers admitted in the same window; rows of the seed's form read as before.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BucketRow, decideRow, decodeRow, emptyRow, encodeRow, rowExpiry } from "../../../src/limiter/bucket-row.ts";
import { periodAt } from "../../../src/limiter/calendar-period.ts";
import { isCalendar, type WindowRule, windowKey } from "../../../src/limiter/window-rules.ts";

const T0 = 1_700_000_000_000;

/** Tiers as a policy might write them: a free one, a pro one with a monthly quota, a burst-only one. */
const TIERS: readonly (readonly WindowRule[])[] = [
  [{ capacity: 5, windowMs: 60_000 }],
  [
    { capacity: 20, windowMs: 60_000 },
    { capacity: 40, period: "month", offsetMinutes: 0 },
  ],
  [
    { capacity: 3, windowMs: 1_000 },
    { capacity: 12, windowMs: 60_000 },
    { capacity: 30, period: "day", offsetMinutes: 120 },
  ],
];

const steps = fc.array(
  fc.record({
    gap: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 30_000 }), fc.integer({ min: 0, max: 20 * 86_400_000 })),
    tier: fc.integer({ min: 0, max: TIERS.length - 1 }),
    cost: fc.integer({ min: 0, max: 6 }),
    seedForm: fc.boolean(),
  }),
  { minLength: 1, maxLength: 150 },
);

function stored(row: BucketRow): BucketRow {
  const { windowMs, text } = encodeRow(row);
  return decodeRow(windowMs, text);
}

describe("bucket rows", () => {
  it("admit only what fits every window of the deciding tier, whatever tiers counted before, through the table's text", () => {
    fc.assert(
      fc.property(steps, (trace) => {
        let row = emptyRow;
        const logs = new Map<string, { at: number; cost: number }[]>();
        let now = T0;
        for (const { gap, tier, cost, seedForm } of trace) {
          now += gap;
          const rules = TIERS[tier]!;
          const request =
            seedForm && rules.length === 1
              ? { id: "b", spec: rules[0] as { capacity: number; windowMs: number }, want: 1, leaseMs: 0, forRequest: true }
              : { id: "b", spec: { capacity: 1, windowMs: 1 }, windows: rules, cost, want: 1, leaseMs: 0, forRequest: true };
          const { decision, row: next } = decideRow(row, request, now);
          row = stored(next);
          if (!decision.allowed) continue;
          const charged = request.cost ?? 1;
          for (const rule of rules) {
            const log = logs.get(windowKey(rule)) ?? [];
            log.push({ at: now, cost: charged });
            logs.set(windowKey(rule), log);
            const from = isCalendar(rule) ? periodAt(now, rule.period, rule.offsetMinutes).start - 1 : now - rule.windowMs;
            const counted = log.filter(({ at }) => at > from && at <= now).reduce((sum, { cost: c }) => sum + c, 0);
            expect(counted).toBeLessThanOrEqual(rule.capacity);
          }
        }
        const expires = rowExpiry(row);
        if (expires !== undefined) expect(expires).toBeGreaterThan(now - 31 * 86_400_000);
      }),
      { numRuns: 300 },
    );
  });

  it("a row written in the seed's form reads as one sliding window and keeps its count under several windows", () => {
    const seedText = JSON.stringify([T0, T0 + 1, 4]);
    const row = decodeRow(60_000, seedText);
    expect(row).toEqual({ windowMs: 60_000, state: { subWindows: [{ start: T0, end: T0 + 1, count: 4 }] } });
    const minute = { capacity: 5, windowMs: 60_000 };
    const rules: WindowRule[] = [minute, { capacity: 100, period: "month", offsetMinutes: 0 }];
    const first = decideRow(row, { id: "b", spec: minute, windows: rules, cost: 1, want: 1, leaseMs: 0, forRequest: true }, T0 + 10);
    expect(first.decision).toMatchObject({ allowed: true, remaining: 0 });
    const second = decideRow(stored(first.row), { id: "b", spec: minute, windows: rules, cost: 1, want: 1, leaseMs: 0, forRequest: true }, T0 + 20);
    expect(second.decision.allowed).toBe(false);
    expect(encodeRow(first.row).windowMs).toBe(0);
  });

  it("a row of one sliding window is written in the seed's form, whatever decided it", () => {
    const rules = [{ capacity: 5, windowMs: 60_000 }];
    const { row } = decideRow(emptyRow, { id: "b", spec: rules[0]!, windows: rules, cost: 3, want: 1, leaseMs: 0, forRequest: true }, T0);
    expect(encodeRow(row)).toEqual({ windowMs: 60_000, text: JSON.stringify([T0 - (T0 % 1000), T0, 3]) });
  });
});
