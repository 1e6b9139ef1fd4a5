/**
 * The sliding-window counter against an exact sliding log, on random and bursty traces (fast-check):
 * never over-admits, retry times are exact, state stays bounded, and under-admission stays within
 * the share of one sub-window.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  emptyWindow,
  expiresAt,
  hit,
  SUB_WINDOWS,
  subWindowLength,
  type WindowDecision,
  type WindowSpec,
  type WindowState,
} from "../../../src/limiter/sliding-window.ts";
import { countIn, lowerBound, maxInAnyWindow, SlidingLog, upperBound } from "../support/sliding-log.ts";

const T0 = 1_700_000_000_000;

interface Step {
  readonly now: number;
  readonly before: WindowState;
  readonly decision: WindowDecision;
  readonly after: WindowState;
}

interface Run {
  readonly spec: WindowSpec;
  readonly steps: readonly Step[];
  /** Times of the admitted requests, in order. */
  readonly admitted: readonly number[];
}

/** Windows from 60s to 24h in steps of 10s, with the edges and the round values over-represented. */
const windowMs = fc.oneof(
  fc.constantFrom(60_000, 70_000, 600_000, 3_600_000, 86_400_000),
  fc.integer({ min: 6, max: 8_640 }).map((tens) => tens * 10_000),
);

const capacity = fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 5 }), fc.integer({ min: 6, max: 200 }), fc.constant(2_000_000_000));

/**
 * A trace: groups of simultaneous requests (bursts) separated by gaps measured against the window,
 * so that some traces stay inside one sub-window and others span many windows.
 */
const traceFor = (spec: WindowSpec) => {
  const sub = subWindowLength(spec.windowMs);
  const gap = fc.oneof(
    { weight: 2, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 50 }) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 * sub }) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: Math.ceil(spec.windowMs / 8) }) },
    { weight: 1, arbitrary: fc.integer({ min: spec.windowMs - sub, max: 2 * spec.windowMs }) },
  );
  const burst = fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 40 }) });
  return fc.tuple(fc.integer({ min: 0, max: 10_000_000 }), fc.array(fc.tuple(gap, burst), { minLength: 1, maxLength: 80 })).map(([offset, groups]) => {
    const times: number[] = [];
    let now = T0 + offset;
    for (const [wait, size] of groups) {
      now += wait;
      for (let i = 0; i < size; i++) times.push(now);
    }
    return times;
  });
};

const scenario = fc.record({ capacity, windowMs }).chain((spec) => traceFor(spec).map((times) => ({ spec, times })));

function run(spec: WindowSpec, times: readonly number[]): Run {
  let state = emptyWindow;
  const steps: Step[] = [];
  const admitted: number[] = [];
  for (const now of times) {
    const { decision, state: after } = hit(state, now, spec);
    steps.push({ now, before: state, decision, after });
    if (decision.allowed) admitted.push(now);
    state = after;
  }
  return { spec, steps, admitted };
}

/**
 * Checks a property on every scenario; fast-check shrinks a failure to a small trace. fast-check's default
 * number of runs: each trace is up to 80 bursts long and every property here sees its own traces; the one
 * that matters most, never over-admitting, asks for more.
 */
function forEveryTrace(check: (result: Run) => void, numRuns = 100): void {
  fc.assert(
    fc.property(scenario, ({ spec, times }) => check(run(spec, times))),
    { numRuns },
  );
}

/**
 * Where the counter's count starts at `now`, given the admissions so far: at the start of the sub-window
 * holding the oldest admission still inside (now - windowMs, now], because a sub-window counts whole until
 * its latest admission leaves the window. Infinity when no admission is inside the window.
 */
function countedSince(now: number, spec: WindowSpec, admittedSoFar: readonly number[]): number {
  const oldest = admittedSoFar[upperBound(admittedSoFar, now - spec.windowMs)];
  if (oldest === undefined) return Number.POSITIVE_INFINITY;
  const length = subWindowLength(spec.windowMs);
  return Math.floor(oldest / length) * length;
}

describe("exactness against the sliding log", () => {
  it("never admits more than capacity in any window of length windowMs", () => {
    forEveryTrace(({ spec, admitted }) => {
      expect(maxInAnyWindow(admitted, spec.windowMs)).toBeLessThanOrEqual(spec.capacity);
    }, 300);
  });

  it("admits exactly when its admissions since the sub-window of the oldest admission inside the window are fewer than capacity", () => {
    forEveryTrace(({ spec, steps }) => {
      const admittedSoFar: number[] = [];
      for (const { now, decision } of steps) {
        const counted = admittedSoFar.length - lowerBound(admittedSoFar, countedSince(now, spec, admittedSoFar));
        expect(decision.allowed).toBe(counted < spec.capacity);
        if (decision.allowed) admittedSoFar.push(now);
      }
    });
  });

  it("a rejected request finds at least capacity minus one sub-window's admissions in its exact window", () => {
    forEveryTrace(({ spec, steps }) => {
      const admittedSoFar: number[] = [];
      for (const { now, decision } of steps) {
        if (decision.allowed) {
          admittedSoFar.push(now);
          continue;
        }
        const inWindow = countIn(admittedSoFar, now - spec.windowMs, now);
        const inStraddlingSubWindow = countIn(admittedSoFar, countedSince(now, spec, admittedSoFar) - 1, now - spec.windowMs);
        expect(inWindow + inStraddlingSubWindow).toBeGreaterThanOrEqual(spec.capacity);
      }
    });
  });
});

describe("decisions", () => {
  it("remaining is capacity minus what is counted after the decision, 0 when rejected, and never more than the exact log allows", () => {
    forEveryTrace(({ spec, steps }) => {
      const admittedSoFar: number[] = [];
      for (const { now, decision } of steps) {
        if (decision.allowed) admittedSoFar.push(now);
        const counted = admittedSoFar.length - lowerBound(admittedSoFar, countedSince(now, spec, admittedSoFar));
        expect(decision.remaining).toBe(decision.allowed ? spec.capacity - counted : 0);
        expect(decision.remaining).toBeLessThanOrEqual(spec.capacity - countIn(admittedSoFar, now - spec.windowMs, now));
      }
    });
  });

  it("after a rejection, with no other traffic, a request at now + retryAfterMs is admitted and one at now + retryAfterMs - 1 is not", () => {
    forEveryTrace(({ spec, steps }) => {
      for (const { now, decision, after } of steps) {
        if (decision.allowed) {
          expect(decision.retryAfterMs).toBe(0);
          continue;
        }
        expect(decision.retryAfterMs).toBeGreaterThanOrEqual(1);
        expect(decision.retryAfterMs).toBeLessThanOrEqual(spec.windowMs + subWindowLength(spec.windowMs));
        expect(hit(after, now + decision.retryAfterMs, spec).decision.allowed).toBe(true);
        expect(hit(after, now + decision.retryAfterMs - 1, spec).decision.allowed).toBe(false);
      }
    });
  });

  it("retry-after in whole seconds (rounded up) is the least number of seconds after which the request is admitted", () => {
    forEveryTrace(({ spec, steps }) => {
      for (const { now, decision, after } of steps) {
        if (decision.allowed) continue;
        const seconds = Math.ceil(decision.retryAfterMs / 1000);
        expect(hit(after, now + seconds * 1000, spec).decision.allowed).toBe(true);
        if (seconds > 1) expect(hit(after, now + (seconds - 1) * 1000, spec).decision.allowed).toBe(false);
      }
    });
  });

  it("remaining more requests at the same instant are admitted, and the one after them is not", () => {
    forEveryTrace(({ spec, steps }) => {
      for (const { now, decision, after } of steps) {
        if (!decision.allowed || decision.remaining > 50) continue;
        let state = after;
        for (let i = 0; i < decision.remaining; i++) {
          const next = hit(state, now, spec);
          expect(next.decision.allowed).toBe(true);
          state = next.state;
        }
        expect(hit(state, now, spec).decision.allowed).toBe(false);
      }
    }, 100);
  });

  it("at now + resetMs nothing counted now is left, and expiresAt names the same instant", () => {
    forEveryTrace(({ spec, steps }) => {
      for (const { now, decision, after } of steps) {
        expect(expiresAt(after, spec.windowMs)).toBe(now + decision.resetMs);
        expect(hit(after, now + decision.resetMs, spec).decision.remaining).toBe(spec.capacity - 1);
        const early = hit(after, now + decision.resetMs - 1, spec).decision;
        expect(early.allowed ? early.remaining : -1).toBeLessThan(spec.capacity - 1);
      }
    }, 100);
  });
});

describe("state", () => {
  it("holds at most SUB_WINDOWS + 1 sub-windows, ascending, aligned, non-empty, ending inside their span, counting no more than capacity", () => {
    forEveryTrace(({ spec, steps }) => {
      const length = subWindowLength(spec.windowMs);
      for (const { now, after } of steps) {
        const subs = after.subWindows;
        expect(subs.length).toBeLessThanOrEqual(SUB_WINDOWS + 1);
        let total = 0;
        subs.forEach((sub, i) => {
          expect(sub.end).toBeGreaterThanOrEqual(sub.start);
          expect(sub.end).toBeLessThan(sub.start + length);
          expect(sub.start % length).toBe(0);
          expect(sub.count).toBeGreaterThan(0);
          expect(sub.end + spec.windowMs).toBeGreaterThan(now);
          if (i > 0) expect(sub.start).toBeGreaterThanOrEqual(subs[i - 1].start + length);
          total += sub.count;
        });
        expect(total).toBeLessThanOrEqual(spec.capacity);
      }
    });
  });

  it("a rejection changes nothing but dropping sub-windows that left the window", () => {
    forEveryTrace(({ spec, steps }) => {
      for (const { before, decision, after, now } of steps) {
        if (decision.allowed) continue;
        expect(after.subWindows).toEqual(before.subWindows.filter((sub) => sub.end + spec.windowMs > now));
      }
    });
  });
});

/**
 * Under-admission: how many fewer requests the counter admits than the exact log on the same arrivals,
 * over a long run. Counting the oldest sub-window whole until its latest admission leaves the window makes
 * the counter's window up to one sub-window (windowMs / SUB_WINDOWS) longer for that sub-window's older
 * admissions, so under sustained overload it admits at least capacity per (windowMs + windowMs / SUB_WINDOWS)
 * where the log admits capacity per windowMs: a deficit of at most 1/(SUB_WINDOWS + 1). With discrete arrivals
 * a freed slot also waits for the next arrival, at most one arrival period (< windowMs / capacity under
 * overload): one more request per window, 1/capacity. And a finite run may end mid-batch: one window's
 * admissions over the run, 1/windows.
 * Bound: 1/SUB_WINDOWS + 1/capacity + 1/windows.
 */
describe("under-admission on steady traffic", () => {
  const WINDOWS = 200;

  function underAdmission(spec: WindowSpec, load: number, arrivals: "periodic" | "poisson", windows = WINDOWS): number {
    const oracle = new SlidingLog(spec.capacity, spec.windowMs);
    const period = spec.windowMs / (load * spec.capacity);
    let seed = 7;
    const uniform = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
    let state = emptyWindow;
    let admitted = 0;
    for (let t = 0; t < windows * spec.windowMs; t += arrivals === "periodic" ? period : -Math.log(1 - uniform()) * period) {
      const now = T0 + Math.floor(t);
      const result = hit(state, now, spec);
      state = result.state;
      if (result.decision.allowed) admitted++;
      oracle.hit(now);
    }
    return (oracle.admitted.length - admitted) / oracle.admitted.length;
  }

  const cases = [
    { capacity: 10, windowMs: 60_000 },
    { capacity: 100, windowMs: 60_000 },
    { capacity: 120, windowMs: 70_000 },
    { capacity: 60, windowMs: 86_400_000 },
  ];

  for (const spec of cases) {
    it(`stays within 1/SUB_WINDOWS + 1/capacity + 1/windows for capacity ${spec.capacity} per ${spec.windowMs / 1000}s, periodic and Poisson arrivals at 1 to 5 times capacity`, () => {
      const bound = 1 / SUB_WINDOWS + 1 / spec.capacity + 1 / WINDOWS;
      for (const load of [1, 1.05, 1.3, 2, 5]) {
        expect(underAdmission(spec, load, "periodic")).toBeLessThanOrEqual(bound);
        expect(underAdmission(spec, load, "poisson")).toBeLessThanOrEqual(bound);
      }
    });
  }

  it("under sustained overload it stays under 1/(SUB_WINDOWS + 1), the one extra sub-window, and near 0 when each sub-window holds one admission", () => {
    for (const load of [1.3, 2, 5]) {
      // capacity 60 per 60s under periodic overload: one admission per 1s sub-window, which then ends at it
      expect(underAdmission({ capacity: 60, windowMs: 60_000 }, load, "periodic", 300)).toBeLessThan(0.001);
      expect(underAdmission({ capacity: 60, windowMs: 60_000 }, load, "poisson", 300)).toBeLessThan(1 / (SUB_WINDOWS + 1));
      expect(underAdmission({ capacity: 600, windowMs: 60_000 }, load, "poisson", 100)).toBeLessThan(1 / (SUB_WINDOWS + 1));
    }
  });

  it("steady traffic below capacity × SUB_WINDOWS / (SUB_WINDOWS + 1) per window is never rejected", () => {
    const spec = { capacity: 100, windowMs: 60_000 };
    let state = emptyWindow;
    for (let t = 0; t < 20 * spec.windowMs; t += spec.windowMs / (0.95 * spec.capacity)) {
      const result = hit(state, T0 + Math.floor(t), spec);
      expect(result.decision.allowed).toBe(true);
      state = result.state;
    }
  });
});
