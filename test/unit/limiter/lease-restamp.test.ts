/**
 * A lease is recorded at its end, so it stays exact however long it is; what keeps a long (quiet) lease from
 * under-admitting is that nothing else is counted from that end: admissions made while it is out go into their own
 * sub-windows before it, and the hand-back moves the leased admissions that were used to the time of its call.
 * The object's real `take` and row functions, the isolate's real bucket memory, one injected clock.
 */

import { describe, expect, it } from "vitest";
import { type BucketRow, decideRow, emptyRow, rowExpiry, takeProblem } from "../../../src/limiter/bucket-row.ts";
import { QUIET_LEASE, QUIET_LEASE_MS } from "../../../src/limiter/bucket-memory.ts";
import { IsolateBuckets } from "../../../src/limiter/isolate-buckets.ts";
import { checkRoom, emptyWindow, live, MAX_LEASE_MS, take, type WindowSpec, type WindowState } from "../../../src/limiter/sliding-window.ts";
import { maxInAnyWindow } from "../support/sliding-log.ts";

const T0 = 1_700_000_000_000;
const SPEC: WindowSpec = { capacity: 1000, windowMs: 60_000 };
const ID = "r".repeat(43);

const counted = (state: WindowState, now: number) => checkRoom(state, now, SPEC, 1).counted;

describe("a long lease counts only itself from its end", () => {
  it("admissions made while a lease is out leave the window a window after they happened", () => {
    const leased = take(emptyWindow, T0, SPEC, 1 + QUIET_LEASE, QUIET_LEASE_MS);
    expect(leased.decision).toMatchObject({ allowed: true, granted: 1 + QUIET_LEASE });
    let state = leased.state;
    for (let i = 1; i <= 10; i++) state = take(state, T0 + i * 1_000, SPEC, 1, 0).state;
    // Ten requests decided by the object while the lease was out: each leaves a window after it happened, and
    // then only the lease is still counted.
    expect(counted(state, T0 + SPEC.windowMs + 500)).toBe(10 + QUIET_LEASE);
    expect(counted(state, T0 + SPEC.windowMs + 5_500)).toBe(5 + QUIET_LEASE);
    expect(counted(state, T0 + 10_000 + SPEC.windowMs)).toBe(QUIET_LEASE);
    const starts = state.subWindows.map((sub) => sub.start);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
  });

  it("names the lease's own sub-window even when a longer lease taken earlier ends later", () => {
    const quiet = take(emptyWindow, T0, SPEC, 5, QUIET_LEASE_MS).state;
    const busy = take(quiet, T0 + 5_000, SPEC, 3, 1_000);
    expect(busy.decision.leaseStart).toBe(T0 + 6_000);
    // Handing that lease back takes its two admissions out of its sub-window, not out of the quiet lease's.
    const back = take(busy.state, T0 + 7_000, SPEC, 1, 0, { start: T0 + 6_000, count: 2 }).state;
    expect(counted(back, T0 + 7_000)).toBe(5 + 1 + 1);
  });

  it("a hand-back moves the used leased admissions from the lease's end to the object's now", () => {
    const { state, decision } = take(emptyWindow, T0, SPEC, 1 + QUIET_LEASE, QUIET_LEASE_MS);
    // Two of the four used by T0 + 40 s; the other two handed back with the request at T0 + 45 s.
    const returned = { start: decision.leaseStart, count: 2, used: 2 };
    const after = take(state, T0 + 45_000, SPEC, 1, 0, returned).state;
    expect(counted(after, T0 + 45_000)).toBe(1 + 2 + 1);
    // A window after that call, nothing is left: not the lease's end (T0 + 60 s) plus a window.
    expect(counted(after, T0 + 45_000 + SPEC.windowMs - 1)).toBe(3);
    expect(counted(after, T0 + 45_000 + SPEC.windowMs)).toBe(0);
    // Handed back at or after the lease's end, they stay where they are: moving them to now would count them longer.
    const late = take(state, T0 + QUIET_LEASE_MS, SPEC, 1, 0, returned).state;
    expect(counted(late, T0 + QUIET_LEASE_MS + SPEC.windowMs - 1)).toBe(2 + 1);
    expect(counted(late, T0 + QUIET_LEASE_MS + SPEC.windowMs)).toBe(0);
  });

  it("refuses hostile hand-backs and lease lengths without counting less than happened", () => {
    const { state, decision } = take(emptyWindow, T0, SPEC, 1 + QUIET_LEASE, QUIET_LEASE_MS);
    const now = T0 + 1_000;
    const hostile = [
      { start: decision.leaseStart, count: 0, used: 1e9 }, // more used than the lease holds: at most its own
      { start: decision.leaseStart, count: 0, used: Number.NaN },
      { start: decision.leaseStart, count: -5, used: -5 },
      { start: decision.leaseStart + 1, count: 4, used: 0 }, // no such sub-window
      { start: decision.leaseStart, windowMs: 120_000, count: 4, used: 0 }, // another window's lease
    ];
    hostile.forEach((returned, i) => {
      const next = take(state, now, SPEC, 0, 0, returned as never, false).state;
      expect(counted(next, now), `hand-back ${i}`).toBe(1 + QUIET_LEASE);
    });
    // Moved to now, the 4 leave a window after now, not a window after the lease's end.
    const moved = take(state, now, SPEC, 0, 0, { start: decision.leaseStart, count: 0, used: 1e9 }, false).state;
    expect(counted(moved, now + SPEC.windowMs - 1)).toBe(QUIET_LEASE);
    expect(counted(moved, now + SPEC.windowMs)).toBe(0);
    for (const leaseMs of [2 ** 53, -1, MAX_LEASE_MS + 1, 1.5, Number.NaN]) {
      expect(takeProblem({ id: ID, spec: SPEC, want: 5, leaseMs, forRequest: true })).toBe(`a lease lasts 0 to ${MAX_LEASE_MS} ms`);
    }
    expect(takeProblem({ id: ID, spec: SPEC, want: 5, leaseMs: QUIET_LEASE_MS, forRequest: true })).toBeUndefined();
  });
});

describe("a window whose length changed", () => {
  it("keeps its row until the latest end of its sub-windows, not the last one's", () => {
    // A lease under a two-minute window lands in a 2 s span; a request under one minute then adds a 1 s span
    // inside it, ending before the lease's end. The row must outlive the lease's admissions by a whole window.
    const twoMinutes = { capacity: 50, windowMs: 120_000 };
    const minute = { capacity: 50, windowMs: 60_000 };
    const leased = decideRow(emptyRow, { id: ID, spec: twoMinutes, want: 5, leaseMs: 60_000, forRequest: true }, T0 + 1_800);
    expect(leased.decision).toMatchObject({ granted: 5, leaseStart: T0 + 60_000 });
    const after = decideRow(leased.row, { id: ID, spec: minute, want: 1, leaseMs: 0, forRequest: true }, T0 + 61_500).row;
    expect(rowExpiry(after)).toBe(T0 + 61_800 + minute.windowMs);
  });
});

/** One isolate in front of one object's row: every request as limiter-client.ts sends it for a quiet-leasing limit. */
function quietClient(spec: WindowSpec) {
  const clock = { now: T0 };
  const buckets = new IsolateBuckets({ now: () => clock.now });
  let row: BucketRow = emptyRow;
  const admitted: number[] = [];
  let calls = 0;
  const request = () => {
    const consulted = buckets.consult(ID, false, { need: 1, leases: true, quietLease: true });
    let allowed: boolean;
    if ("decision" in consulted) allowed = consulted.decision.allowed;
    else {
      calls++;
      const take = { id: ID, spec, want: consulted.want, leaseMs: consulted.leaseMs, returned: consulted.returned, forRequest: true };
      const decided = decideRow(row, take, clock.now);
      row = decided.row;
      allowed = buckets.settle(ID, consulted, decided.decision).allowed;
    }
    if (allowed) admitted.push(clock.now);
  };
  return { clock, request, admitted, calls: () => calls, row: () => row };
}

describe("a quiet client on a long quiet lease", () => {
  it("reaching its limit gets its whole capacity in every window and never more in any", () => {
    // One request a second keeps the bucket quiet, so every lease is a quiet one; a capacity of 50 a minute makes
    // it reach the limit (limiter-client.ts asks for quiet leases only from 1,000, where the arithmetic is the same).
    const spec = { capacity: 50, windowMs: 60_000 };
    const client = quietClient(spec);
    let callsWhileRoomy = 0;
    for (let s = 0; s < 600; s++, client.clock.now += 1_000) {
      client.request();
      if (s === 19) callsWhileRoomy = client.calls();
    }
    // Far from the limit, about one call in four requests; near it, every request is decided by the object.
    expect(callsWhileRoomy).toBeLessThanOrEqual(6); // fewer admissions leased as the room shrinks (a tenth of it at most)
    expect(maxInAnyWindow(client.admitted, spec.windowMs)).toBeLessThanOrEqual(spec.capacity);
    // The exact log admits 50 of every 60 requests. Counting used leased admissions from their lease's end (60 s
    // on) would admit about 50 in 120 s; here each window loses at most what one lease holds.
    for (let start = 0; start + spec.windowMs <= 600_000; start += spec.windowMs) {
      const inWindow = client.admitted.filter((at) => at >= T0 + start && at < T0 + start + spec.windowMs).length;
      expect(inWindow, `the window from ${start / 1000} s`).toBeGreaterThanOrEqual(spec.capacity - QUIET_LEASE);
    }
  });

  it("a client coming back every 20 s calls its object once in three requests", () => {
    const client = quietClient(SPEC);
    for (let i = 0; i < 30; i++, client.clock.now += 20_000) client.request();
    expect(client.admitted).toHaveLength(30);
    expect(client.calls()).toBe(10);
    // What is counted is what was admitted in the last window, and the four admissions the last lease holds.
    const row = client.row() as { state: WindowState };
    const now = client.clock.now;
    const inWindow = client.admitted.filter((at) => at > now - SPEC.windowMs).length;
    const total = live(row.state, now, SPEC.windowMs).reduce((sum, sub) => sum + sub.count, 0);
    expect(total - inWindow).toBeLessThanOrEqual(QUIET_LEASE);
  });
});
