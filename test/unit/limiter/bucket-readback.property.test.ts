import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readBucket } from "../../../src/limiter/bucket-readback.ts";
import { type BucketRow, decideRow, emptyRow, settleRow } from "../../../src/limiter/bucket-row.ts";
import type { WindowRule } from "../../../src/limiter/window-rules.ts";

const SEED: WindowRule[] = [{ capacity: 20, windowMs: 60_000 }];
const SEVERAL: WindowRule[] = [
  { capacity: 12, windowMs: 10_000 },
  { capacity: 30, windowMs: 60_000 },
  { capacity: 50, period: "hour", offsetMinutes: 0 },
];

type Step =
  | { kind: "take"; after: number; want: number; returned: number }
  | { kind: "weighted"; after: number; cost: number; reserve: boolean }
  | { kind: "settle"; after: number; cost: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant("take" as const),
    after: fc.integer({ min: 0, max: 4_000 }),
    want: fc.integer({ min: 1, max: 40 }),
    returned: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({ kind: fc.constant("weighted" as const), after: fc.integer({ min: 0, max: 4_000 }), cost: fc.integer({ min: 0, max: 9 }), reserve: fc.boolean() }),
  fc.record({ kind: fc.constant("settle" as const), after: fc.integer({ min: 0, max: 4_000 }), cost: fc.integer({ min: 0, max: 9 }) }),
);

/**
 * Runs `steps` on one bucket with the limiter's own row functions (admissions, refusals, leases and hand-backs on
 * the seed's rules; costs, reservations and settles on several windows) and, after each, checks the read-back
 * against what the next take would decide on the same row at the same time, then that the read changed nothing.
 */
function check(rules: WindowRule[], steps: Step[]): void {
  let row: BucketRow = emptyRow;
  let now = 1_700_000_000_000;
  const reservations: string[] = [];
  let leaseStart = 0;
  for (const [i, s] of steps.entries()) {
    now += s.after;
    if (s.kind === "take" && rules === SEED) {
      const returned = s.returned > 0 && leaseStart > 0 ? { start: leaseStart, count: s.returned } : undefined;
      const taken = decideRow(
        row,
        { id: "b", spec: SEED[0] as { capacity: number; windowMs: number }, want: s.want, leaseMs: 1000, returned, forRequest: true },
        now,
      );
      if (taken.decision.leaseStart > 0) leaseStart = taken.decision.leaseStart;
      row = taken.row;
    } else if (s.kind === "settle") {
      const reservation = reservations.shift();
      if (reservation) row = settleRow(row, { id: "b", reservation, cost: s.cost }, now).row;
    } else if (s.kind === "weighted" && rules !== SEED) {
      const reserve = s.reserve ? `r${i}` : undefined;
      const taken = decideRow(row, { id: "b", windows: rules, cost: s.cost, want: 1, leaseMs: 0, forRequest: true, ...(reserve ? { reserve } : {}) }, now);
      if (reserve && taken.decision.allowed) reservations.push(reserve);
      row = taken.row;
    }
    const read = readBucket(row, rules, now);
    const next = decideRow(row, { id: "b", windows: rules, cost: 1, want: 1, leaseMs: 0, forRequest: true }, now);
    // Room for one more in every window exactly when the next take of cost 1 is admitted; when not, the same wait.
    expect(read.every((window) => window.remaining > 0)).toBe(next.decision.allowed);
    if (!next.decision.allowed) expect(Math.max(...read.map((window) => window.retryAfterMs))).toBe(next.decision.retryAfterMs);
    for (const [w, window] of read.entries()) {
      expect(window.used + window.remaining).toBe(Math.max(window.used, rules[w]!.capacity));
      const part = next.decision.windows?.[w];
      if (part && next.decision.allowed) expect(part.remaining).toBe(window.remaining - 1);
    }
    expect(readBucket(row, rules, now)).toEqual(read);
  }
}

describe("a bucket read back", () => {
  it("agrees with the next take after admissions, refusals, leases and hand-backs (one sliding window)", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => check(SEED, steps)),
      { numRuns: 300 },
    );
  });

  it("agrees with the next take after costs, reservations and settles (several windows, a calendar period)", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => check(SEVERAL, steps)),
      { numRuns: 300 },
    );
  });

  it("counts a lease at once: 1 request that leased 4 more reads as 5 used", () => {
    const now = 1_700_000_000_000;
    const rule = { capacity: 100, windowMs: 60_000 };
    const { row } = decideRow(emptyRow, { id: "b", spec: rule, want: 5, leaseMs: 1000, forRequest: true }, now);
    expect(readBucket(row, [rule], now + 10)[0]).toMatchObject({ capacity: 100, used: 5, remaining: 95, retryAfterMs: 0 });
  });

  it("an empty bucket: nothing used, everything remains, nothing to wait for", () => {
    expect(readBucket(emptyRow, SEVERAL, 1_700_000_000_000)).toEqual(
      SEVERAL.map((rule) => ({ capacity: rule.capacity, used: 0, remaining: rule.capacity, retryAfterMs: 0, refillMs: 0, resetMs: 0 })),
    );
  });
});
