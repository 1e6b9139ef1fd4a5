import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { emptyWindow, SUB_WINDOWS, take, type WindowState } from "../../../src/limiter/sliding-window.ts";
import { maxInAnyWindow } from "../support/sliding-log.ts";

const LEASE_MS = 1_000;

/** One isolate in front of the object: it uses leased admissions until their deadline, as limiter-client.ts does. */
function simulate(times: readonly number[], capacity: number, windowMs: number, wants: readonly number[]) {
  let state: WindowState = emptyWindow;
  let slots = 0;
  let useBy = 0;
  let maxSubWindows = 0;
  const admitted: number[] = [];
  times.forEach((now, i) => {
    if (slots > 0 && now < useBy) {
      slots--;
      admitted.push(now);
      return;
    }
    const result = take(state, now, { capacity, windowMs }, wants[i % wants.length], LEASE_MS);
    state = result.state;
    maxSubWindows = Math.max(maxSubWindows, state.subWindows.length);
    if (result.decision.allowed) {
      admitted.push(now);
      if (result.decision.granted > 1) {
        slots = (now < useBy ? slots : 0) + result.decision.granted - 1;
        useBy = now < useBy && slots > 0 ? Math.min(useBy, now + LEASE_MS) : now + LEASE_MS;
      }
    } else if (slots > 0 && now < useBy) {
      slots--;
      admitted.push(now);
    }
  });
  return { admitted, maxSubWindows };
}

const traces = fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 300, maxLength: 2000, size: "max" }).map((gaps) => {
  let t = 1_700_000_000_000;
  return gaps.map((gap) => (t += gap));
});

describe("leased admissions (take)", () => {
  it("never admit more than capacity in any window, however the leases are used", () => {
    fc.assert(
      fc.property(
        traces,
        fc.integer({ min: 1, max: 400 }),
        fc.constantFrom(60_000, 120_000),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }),
        (times, capacity, windowMs, wants) => {
          const { admitted, maxSubWindows } = simulate(times, capacity, windowMs, wants);
          expect(maxInAnyWindow(admitted, windowMs)).toBeLessThanOrEqual(capacity);
          expect(maxSubWindows).toBeLessThanOrEqual(SUB_WINDOWS + 2 + Math.ceil(LEASE_MS / (windowMs / SUB_WINDOWS)));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("lease nothing without room to spare: at most a tenth of the room, and none when asked for one", () => {
    const spec = { capacity: 100, windowMs: 60_000 };
    const first = take(emptyWindow, 0, spec, 64, LEASE_MS);
    expect(first.decision).toMatchObject({ allowed: true, granted: 10, remaining: 90 });
    const single = take(emptyWindow, 0, spec, 1, LEASE_MS);
    expect(single.decision).toMatchObject({ allowed: true, granted: 1, remaining: 99 });
    let state = emptyWindow;
    for (let i = 0; i < 81; i++) state = take(state, i, spec, 1, LEASE_MS).state;
    expect(take(state, 100, spec, 64, LEASE_MS).decision).toMatchObject({ granted: 1, remaining: 18 });
  });

  it("a busy bucket with room to spare is decided by the object about once per lease", () => {
    const times = Array.from({ length: 20_000 }, (_, i) => 1_700_000_000_000 + i); // 1000 requests a second
    let state: WindowState = emptyWindow;
    let slots = 0;
    let useBy = 0;
    let calls = 0;
    for (const now of times) {
      if (slots > 0 && now < useBy) {
        slots--;
        continue;
      }
      calls++;
      const { decision, state: next } = take(state, now, { capacity: 2_000_000_000, windowMs: 60_000 }, 64, LEASE_MS);
      state = next;
      slots = decision.granted - 1;
      useBy = now + LEASE_MS;
    }
    expect(calls).toBe(Math.ceil(times.length / 64));
  });

  it("a lease asked for ahead decides no request: all it grants is leased, recorded a lease period ahead, at most a tenth of the room", () => {
    const spec = { capacity: 1_000, windowMs: 60_000 };
    const ahead = take(emptyWindow, 5_000, spec, 40, LEASE_MS, undefined, false);
    expect(ahead.decision).toMatchObject({ allowed: true, granted: 40, remaining: 960, leaseStart: 6_000 });
    // Nothing at now: the only sub-window is the lease's, a lease period ahead.
    expect(ahead.state.subWindows).toEqual([{ start: 6_000, end: 6_000, count: 40 }]);
    expect(take(emptyWindow, 5_000, spec, 500, LEASE_MS, undefined, false).decision).toMatchObject({ granted: 100, remaining: 900 });
  });

  it("a lease asked for ahead of a bucket with less than ten to spare grants nothing, and of a full bucket says when to retry", () => {
    const spec = { capacity: 100, windowMs: 60_000 };
    let state: WindowState = emptyWindow;
    for (let i = 0; i < 91; i++) state = take(state, i, spec, 1, LEASE_MS).state;
    const little = take(state, 100, spec, 40, LEASE_MS, undefined, false);
    expect(little.decision).toMatchObject({ allowed: true, granted: 0, remaining: 9 });
    expect(little.state).toEqual({ subWindows: state.subWindows });
    for (let i = 91; i < 100; i++) state = take(state, i, spec, 1, LEASE_MS).state;
    const full = take(state, 200, spec, 40, LEASE_MS, undefined, false);
    expect(full.decision).toMatchObject({ allowed: false, granted: 0, remaining: 0 });
    expect(full.decision.retryAfterMs).toBeGreaterThan(59_000);
  });
});
