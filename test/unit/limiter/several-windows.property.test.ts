/**
 * Several windows and weighted costs against exact logs (fast-check): never more than a window's capacity in
 * any sliding window or any calendar period, all or nothing, retry times that are enough, and calendar windows
 * exactly as their log.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CALENDAR_PERIODS, type CalendarSpec, periodAt } from "../../../src/limiter/calendar-period.ts";
import { decideWindows, type StoredWindow } from "../../../src/limiter/several-windows.ts";
import { emptyWindow, hit, type WindowSpec, type WindowState } from "../../../src/limiter/sliding-window.ts";
import { isCalendar, windowKey, type WindowRule } from "../../../src/limiter/window-rules.ts";

const T0 = 1_700_000_000_000;

/** Weighted admissions of one window, in time order: the exact log. */
type Log = { at: number; cost: number }[];

function costIn(log: Log, from: number, to: number): number {
  let sum = 0;
  for (const { at, cost } of log) if (at > from && at <= to) sum += cost;
  return sum;
}

/** The most cost inside any sliding window (t - windowMs, t]: reached by a window ending at an admission. */
function maxCostInAnyWindow(log: Log, windowMs: number): number {
  return Math.max(0, ...log.map(({ at }) => costIn(log, at - windowMs, at)));
}

function maxCostInAnyPeriod(log: Log, spec: CalendarSpec): number {
  const perPeriod = new Map<number, number>();
  for (const { at, cost } of log) {
    const { start } = periodAt(at, spec.period, spec.offsetMinutes);
    perPeriod.set(start, (perPeriod.get(start) ?? 0) + cost);
  }
  return Math.max(0, ...perPeriod.values());
}

const slidingRule = fc.record({
  capacity: fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 7, max: 60 })),
  windowMs: fc.oneof(
    fc.constantFrom(1_000, 60_000, 3_600_000),
    fc.integer({ min: 1, max: 600 }).map((s) => s * 1_000),
  ),
});
const calendarRule = fc.record({
  capacity: fc.integer({ min: 1, max: 60 }),
  period: fc.constantFrom(...CALENDAR_PERIODS),
  offsetMinutes: fc.constantFrom(0, 60, -300, 330, 840, -840),
});
const rules = fc
  .array(fc.oneof(slidingRule, calendarRule) as fc.Arbitrary<WindowRule>, { minLength: 1, maxLength: 4 })
  .map((list) => list.filter((rule, i) => list.findIndex((other) => windowKey(other) === windowKey(rule)) === i));

/** Gaps from none to beyond a month, so sliding windows slide and calendar periods turn. */
const gap = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 300 }) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 120_000 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 6 * 3_600_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 40 * 86_400_000 }) },
);
const steps = fc.array(fc.record({ gap, cost: fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 2, max: 8 })) }), { minLength: 1, maxLength: 150 });

describe("several windows and weighted costs", () => {
  it("never hold more than a window's capacity in any sliding window or period, and refuse all or nothing", () => {
    fc.assert(
      fc.property(rules, steps, fc.integer({ min: 0, max: 400 * 86_400_000 }), (list, trace, offset) => {
        let windows = new Map<string, StoredWindow>();
        const logs = list.map((): Log => []);
        let now = T0 + offset;
        for (const { gap: step, cost } of trace) {
          now += step;
          const { decision, windows: after } = decideWindows(windows, now, list, cost);
          const before = list.map((rule) => windows.get(windowKey(rule)));
          if (decision.allowed) {
            for (const log of logs) log.push({ at: now, cost });
          } else {
            // Counted in none: each window is what it was, only brought up to now.
            after.forEach((stored, i) => {
              const again = decideWindows(new Map([[stored.key, stored]]), now, [list[i]!], 0).windows[0];
              const previous = decideWindows(before[i] ? new Map([[before[i]!.key, before[i]!]]) : new Map(), now, [list[i]!], 0).windows[0];
              expect(again).toEqual(previous);
            });
            expect(decision.retryAfterMs).toBeGreaterThan(0);
            // Retrying after retry-after with nothing else admitted meanwhile is admitted (costs fit every capacity here).
            if (list.every((rule) => Math.max(1, cost) <= rule.capacity)) {
              expect(decideWindows(new Map(after.map((w) => [w.key, w])), now + decision.retryAfterMs, list, cost).decision.allowed).toBe(true);
            }
          }
          windows = new Map([...windows, ...after.map((w): [string, StoredWindow] => [w.key, w])]);
        }
        list.forEach((rule, i) => {
          const most = isCalendar(rule) ? maxCostInAnyPeriod(logs[i]!, rule) : maxCostInAnyWindow(logs[i]!, rule.windowMs);
          expect(most).toBeLessThanOrEqual(rule.capacity);
        });
      }),
      { numRuns: 300 },
    );
  });

  it("a calendar window decides exactly as its log: admitted iff the period's cost plus this one fits", () => {
    fc.assert(
      fc.property(calendarRule, steps, fc.integer({ min: 0, max: 400 * 86_400_000 }), (rule, trace, offset) => {
        let windows = new Map<string, StoredWindow>();
        const log: Log = [];
        let now = T0 + offset;
        for (const { gap: step, cost } of trace) {
          now += step;
          const { start } = periodAt(now, rule.period, rule.offsetMinutes);
          const used = costIn(log, start - 1, now);
          const { decision, windows: after } = decideWindows(windows, now, [rule], cost);
          expect(decision.allowed).toBe(used + Math.max(1, cost) <= rule.capacity);
          if (decision.allowed) log.push({ at: now, cost });
          else expect(now + decision.retryAfterMs).toBe(periodAt(now, rule.period, rule.offsetMinutes).end);
          expect(decision.windows![0]!.remaining).toBe(Math.max(0, rule.capacity - used - (decision.allowed ? cost : 0)));
          windows = new Map(after.map((w) => [w.key, w]));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("one sliding window at cost 1 decides as the seed's window does", () => {
    fc.assert(
      fc.property(slidingRule, fc.array(fc.integer({ min: 0, max: 90_000 }), { minLength: 1, maxLength: 200 }), (rule: WindowSpec, gaps) => {
        let windows = new Map<string, StoredWindow>();
        let seed: WindowState = emptyWindow;
        let now = T0;
        for (const step of gaps) {
          now += step;
          const expected = hit(seed, now, rule);
          seed = expected.state;
          const { decision, windows: after } = decideWindows(windows, now, [rule], 1);
          windows = new Map(after.map((w) => [w.key, w]));
          const { allowed, remaining, retryAfterMs, resetMs, refillMs } = decision;
          expect({ allowed, remaining, retryAfterMs, resetMs, refillMs }).toEqual(expected.decision);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("a cost above a capacity is never admitted, and retry-after is that window's length", () => {
    const { decision } = decideWindows(
      new Map(),
      T0,
      [
        { capacity: 5, windowMs: 60_000 },
        { capacity: 100, windowMs: 3_600_000 },
      ],
      6,
    );
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 60_000, remaining: 0 });
  });

  it("a cost of 0 checks without consuming: admitted while there is room for one", () => {
    const rule = { capacity: 2, windowMs: 60_000 };
    let windows = new Map<string, StoredWindow>();
    for (const [cost, allowed, remaining] of [
      [0, true, 2],
      [2, true, 0],
      [0, false, 0],
    ] as const) {
      const result = decideWindows(windows, T0, [rule], cost);
      expect(result.decision).toMatchObject({ allowed, remaining });
      windows = new Map(result.windows.map((w) => [w.key, w]));
    }
  });
});

describe("calendar periods", () => {
  it("start on the boundary of their period in local time, and hold `now`", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.constantFrom(...CALENDAR_PERIODS),
        fc.integer({ min: -840, max: 840 }),
        (now, period, offsetMinutes) => {
          const { start, end } = periodAt(now, period, offsetMinutes);
          expect(start).toBeLessThanOrEqual(now);
          expect(end).toBeGreaterThan(now);
          const local = new Date(start + offsetMinutes * 60_000);
          expect([local.getUTCMinutes(), local.getUTCSeconds(), local.getUTCMilliseconds()]).toEqual([0, 0, 0]);
          if (period !== "hour") expect(local.getUTCHours()).toBe(0);
          if (period === "week") expect(local.getUTCDay()).toBe(1);
          if (period === "month") expect(local.getUTCDate()).toBe(1);
          expect(periodAt(end, period, offsetMinutes).start).toBe(end);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("a month in UTC+02:00 starts at 22:00 UTC the day before", () => {
    expect(periodAt(Date.UTC(2025, 2, 15), "month", 120)).toEqual({ start: Date.UTC(2025, 1, 28, 22), end: Date.UTC(2025, 2, 31, 22) });
  });
});
