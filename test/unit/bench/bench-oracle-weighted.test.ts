import { describe, expect, it } from "vitest";
import { COST_WINDOWS, costAccuracyPolicy } from "../../../bench/limiter/accuracy-costs.ts";
import { overAdmittedWeighted, weightedLogDecisions, weightedLogRefusals } from "../../../bench/limiter/oracle.ts";
import { loadPolicy } from "../../../src/policy/compile.ts";

const windows = [
  { capacity: 10, windowMs: 1000 },
  { capacity: 15, windowMs: 5000 },
];

describe("the exact weighted log with several windows and settles", () => {
  it("admits a whole cost only where it fits every window, and a cost of 0 only where 1 would fit", () => {
    const at = (time: number, cost: number) => ({ at: time, cost, settledAt: Number.POSITIVE_INFINITY });
    // 6 + 4 fill the second; 1 does not fit, nor does 0. A second later the 1 s window is empty, the 5 s one holds 10: 5 fit, 6 would not.
    expect(weightedLogDecisions([at(0, 6), at(10, 4), at(20, 1), at(30, 0), at(1010, 6), at(1020, 5)], windows)).toEqual([
      true,
      true,
      false,
      false,
      false,
      true,
    ]);
  });

  it("says which windows had no room for each refusal", () => {
    const at = (time: number, cost: number) => ({ at: time, cost, settledAt: Number.POSITIVE_INFINITY });
    expect(weightedLogRefusals([at(0, 10), at(10, 1), at(1010, 5), at(1020, 6)], windows)).toEqual([undefined, [0], undefined, [0, 1]]);
  });

  it("replaces an entry's cost in place once its settle lands: a refund makes room, a charge takes it", () => {
    const refund = [
      { at: 0, cost: 9, settled: 2, settledAt: 50 },
      { at: 40, cost: 5, settledAt: Infinity },
      { at: 60, cost: 5, settledAt: Infinity },
    ];
    expect(weightedLogDecisions(refund, windows)).toEqual([true, false, true]);
    const charge = [
      { at: 0, cost: 2, settled: 14, settledAt: 50 },
      { at: 60, cost: 1, settledAt: Infinity },
      { at: 1100, cost: 1, settledAt: Infinity },
    ];
    // Past capacity while the charge sits in the 1 s window, and still at 14 + 1 of the 5 s window's 15 after it.
    expect(weightedLogDecisions(charge, windows)).toEqual([true, false, true]);
  });
});

describe("certain weighted over-admissions, from the client's side", () => {
  const admission = (sent: number, answered: number, cost: number, settled?: number) => ({ sent, answered, cost, settled });

  it("finds an admission past a window's capacity by what was certainly counted before it", () => {
    expect(overAdmittedWeighted([admission(0, 5, 6), admission(10, 15, 4), admission(20, 25, 1)], windows)).toBe(1);
    // The second window: 15 within 5 s.
    expect(overAdmittedWeighted([admission(0, 5, 8), admission(1100, 1105, 7), admission(2200, 2205, 1)], windows)).toBe(1);
  });

  it("never blames an admission on a charge that may not have landed, nor on overlapping intervals", () => {
    // The first settled from 2 to 14: the charge may land after the third request was decided, so 2 + 5 + 3 is what counts.
    expect(overAdmittedWeighted([admission(0, 5, 2, 14), admission(10, 15, 5), admission(20, 25, 3)], windows)).toBe(0);
    // Overlapping intervals: the order of the decisions is unknown.
    expect(overAdmittedWeighted([admission(0, 30, 6), admission(10, 40, 5)], windows)).toBe(0);
  });

  it("counts a refund that may have landed at its settled cost", () => {
    // 9 refunded to 1: 1 + 9 fits the 10 of the first window whether the refund landed or not.
    expect(overAdmittedWeighted([admission(0, 5, 9, 1), admission(10, 15, 9)], windows)).toBe(0);
    expect(overAdmittedWeighted([admission(0, 5, 9), admission(10, 15, 9)], windows)).toBe(1);
  });
});

describe("the bench's costs route", () => {
  it("loads as a policy with the bench's two windows, a cost and a settle", () => {
    const result = loadPolicy(costAccuracyPolicy("bench-accuracy-costs", "req.headers['x-bench-bucket']"), "policies/bench-accuracy-costs.yaml");
    expect(result.ok).toBe(true);
    expect(COST_WINDOWS.map((window) => window.windowMs)).toEqual([10_000, 60_000]);
  });
});
