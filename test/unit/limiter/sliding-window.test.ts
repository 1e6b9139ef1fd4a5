/** The sliding-window counter, by example: decisions, retry times, sub-window bookkeeping and bounds. */

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

/** A start time aligned to the sub-windows of a 60s and of a 24h window (1s and 24min). */
const T0 = 1_700_000_640_000;
const MINUTE: WindowSpec = { capacity: 3, windowMs: 60_000 };

/** Feeds requests at the given times through one bucket and returns every decision and the final state. */
function replay(times: readonly number[], spec: WindowSpec, start: WindowState = emptyWindow) {
  let state = start;
  const decisions: WindowDecision[] = [];
  for (const now of times) {
    const result = hit(state, now, spec);
    decisions.push(result.decision);
    state = result.state;
  }
  return { decisions, state };
}

describe("admitting up to capacity", () => {
  it("a fresh bucket admits capacity requests and counts remaining down to 0", () => {
    const { decisions } = replay([T0, T0 + 10_000, T0 + 20_000], MINUTE);
    expect(decisions.map((d) => [d.allowed, d.remaining, d.retryAfterMs])).toEqual([
      [true, 2, 0],
      [true, 1, 0],
      [true, 0, 0],
    ]);
  });

  it("a bucket at capacity rejects with remaining 0 and the wait until its oldest sub-window leaves the window", () => {
    const { state } = replay([T0, T0 + 10_000, T0 + 20_000], MINUTE);
    const { decision } = hit(state, T0 + 30_000, MINUTE);
    // the first admission's sub-window holds only T0, so it stops counting at T0 + 60s, as the exact log does
    expect(decision).toEqual({ allowed: false, remaining: 0, retryAfterMs: 30_000, resetMs: 50_000, refillMs: 30_000 });
  });

  it("after the capacity is lowered, the wait covers as many sub-windows as it takes to get under it", () => {
    const { state } = replay([T0, T0, T0 + 30_000, T0 + 30_000, T0 + 30_000], { capacity: 5, windowMs: 60_000 });
    const lowered = { capacity: 2, windowMs: 60_000 };
    // 5 counted: the first sub-window leaving frees 2 (3 left, still not under 2); the second frees the rest
    expect(hit(state, T0 + 40_000, lowered).decision).toMatchObject({ allowed: false, retryAfterMs: 50_000 });
  });

  it("a request exactly retryAfterMs later is admitted and one a millisecond earlier is not", () => {
    const { state } = replay([T0, T0 + 10_000, T0 + 20_000], MINUTE);
    const rejected = hit(state, T0 + 30_000, MINUTE);
    const retryAt = T0 + 30_000 + rejected.decision.retryAfterMs;
    expect(hit(rejected.state, retryAt - 1, MINUTE).decision.allowed).toBe(false);
    expect(hit(rejected.state, retryAt, MINUTE).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("a rejected request is not counted", () => {
    const { state } = replay([T0, T0 + 10_000, T0 + 20_000], MINUTE);
    const rejected = hit(state, T0 + 30_000, MINUTE);
    expect(rejected.state).toEqual(state);
    const again = replay([T0 + 30_000, T0 + 40_000, T0 + 50_000], MINUTE, rejected.state);
    expect(again.decisions.every((d) => !d.allowed)).toBe(true);
    expect(again.state).toEqual(state);
  });

  it("remaining says how many more requests the same instant admits", () => {
    const spec = { capacity: 10, windowMs: 60_000 };
    const first = hit(emptyWindow, T0, spec);
    expect(first.decision.remaining).toBe(9);
    const burst = replay(Array(9).fill(T0 + 5), spec, first.state);
    expect(burst.decisions.map((d) => d.remaining)).toEqual([8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(hit(burst.state, T0 + 5, spec).decision.allowed).toBe(false);
  });

  it("a capacity of 1 over 24h admits one request a day", () => {
    const day = { capacity: 1, windowMs: 86_400_000 };
    const first = hit(emptyWindow, T0, day);
    expect(first.decision).toMatchObject({ allowed: true, remaining: 0 });
    const next = hit(first.state, T0 + 86_399_999, day);
    // the sub-window of a 24h window is 24 minutes, but it holds one admission: that counts for exactly 24h
    expect(next.decision).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(hit(first.state, T0 + 86_400_000, day).decision.allowed).toBe(true);
  });
});

describe("sub-windows", () => {
  it("a sub-window is 1/SUB_WINDOWS of the window, rounded up to a whole millisecond", () => {
    expect(SUB_WINDOWS).toBe(60);
    expect(subWindowLength(60_000)).toBe(1_000);
    expect(subWindowLength(70_000)).toBe(1_167);
    expect(subWindowLength(86_400_000)).toBe(1_440_000);
  });

  it("sub-windows start at multiples of their length and end at their latest admission", () => {
    const { state } = hit(emptyWindow, T0 + 1_234, MINUTE);
    expect(state.subWindows).toEqual([{ start: T0 + 1_000, end: T0 + 1_234, count: 1 }]);
    expect(hit(state, T0 + 1_500, MINUTE).state.subWindows).toEqual([{ start: T0 + 1_000, end: T0 + 1_500, count: 2 }]);
  });

  it("requests inside one sub-window share one counter", () => {
    const spec = { capacity: 1_000, windowMs: 60_000 };
    const { state } = replay(
      Array.from({ length: 1_000 }, (_, i) => T0 + (i % 1_000)),
      spec,
    );
    expect(state.subWindows).toEqual([{ start: T0, end: T0 + 999, count: 1_000 }]);
  });

  it("a sub-window counts whole until one window after its latest admission, then stops at once", () => {
    const spec = { capacity: 2, windowMs: 60_000 };
    const { state } = replay([T0 + 100, T0 + 500], spec);
    // the exact log would admit again at T0 + 60.1s; counting the sub-window whole waits until T0 + 60.5s
    expect(hit(state, T0 + 60_100, spec).decision).toMatchObject({ allowed: false, retryAfterMs: 400 });
    expect(hit(state, T0 + 60_499, spec).decision).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(hit(state, T0 + 60_500, spec).decision).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("a window stored with whole-span ends (before ends were tight) still counts every admission a full window", () => {
    const spec = { capacity: 1, windowMs: 60_000 };
    const stored: WindowState = { subWindows: [{ start: T0, end: T0 + 1_000, count: 1 }] };
    expect(hit(stored, T0 + 60_999, spec).decision).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(hit(stored, T0 + 61_000, spec).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("an idle gap longer than the window drops every old sub-window", () => {
    const { state } = replay([T0, T0 + 1_000, T0 + 2_000], MINUTE);
    const later = hit(state, T0 + 200_000, MINUTE);
    expect(later.decision).toMatchObject({ allowed: true, remaining: 2 });
    expect(later.state.subWindows).toEqual([{ start: T0 + 200_000, end: T0 + 200_000, count: 1 }]);
  });

  it("steady traffic never keeps more than SUB_WINDOWS + 1 sub-windows, also when the window is not a multiple of 60", () => {
    for (const windowMs of [60_000, 70_000, 86_400_000]) {
      const spec = { capacity: 1_000_000, windowMs };
      const step = Math.ceil(windowMs / 600);
      let state = emptyWindow;
      let most = 0;
      for (let now = T0; now < T0 + 3 * windowMs; now += step) {
        state = hit(state, now, spec).state;
        most = Math.max(most, state.subWindows.length);
      }
      expect(most).toBeLessThanOrEqual(SUB_WINDOWS + 1);
      expect(most).toBeGreaterThanOrEqual(SUB_WINDOWS);
    }
  });
});

describe("capacity up to 2,000,000,000", () => {
  it("a capacity of 2e9 keeps one counter per sub-window, not one entry per request", () => {
    const spec = { capacity: 2_000_000_000, windowMs: 86_400_000 };
    let state = emptyWindow;
    for (let i = 0; i < 100_000; i++) state = hit(state, T0 + i * 1_500, spec).state;
    expect(state.subWindows.length).toBeLessThanOrEqual(SUB_WINDOWS + 1);
    // a 24min sub-window holds the 960 requests that arrived in it, as one number
    expect(state.subWindows.map((sub) => sub.count)).toContain(960);
  });

  it("a bucket one short of 2e9 admits the last request and rejects the next", () => {
    const spec = { capacity: 2_000_000_000, windowMs: 60_000 };
    const full: WindowState = { subWindows: [{ start: T0, end: T0 + 1_000, count: 1_999_999_999 }] };
    const last = hit(full, T0 + 10_000, spec);
    expect(last.decision).toMatchObject({ allowed: true, remaining: 0 });
    expect(last.state.subWindows.length).toBe(2);
    expect(hit(last.state, T0 + 10_000, spec).decision).toMatchObject({ allowed: false, retryAfterMs: 51_000 });
  });
});

describe("reset and expiry", () => {
  it("resetMs is when every admission counted now has left the window", () => {
    const { decisions, state } = replay([T0, T0 + 20_500], MINUTE);
    expect(decisions[1].resetMs).toBe(60_000);
    const resetAt = T0 + 20_500 + decisions[1].resetMs;
    expect(hit(state, resetAt - 1, MINUTE).decision.remaining).toBe(MINUTE.capacity - 2);
    expect(hit(state, resetAt, MINUTE).decision.remaining).toBe(MINUTE.capacity - 1);
  });

  it("expiresAt is the latest admission plus the window, and undefined for an empty bucket", () => {
    expect(expiresAt(emptyWindow, 60_000)).toBeUndefined();
    const { state } = replay([T0, T0 + 20_500], MINUTE);
    expect(expiresAt(state, 60_000)).toBe(T0 + 20_500 + 60_000);
  });
});
