/**
 * A take sent again after the call carrying it went stale (src/limiter/calls-in-flight.ts): the object may have
 * decided it in that call already, so it is decided twice. That may only count more, never less: its lease
 * hand-back is left out (applied twice it would take other requests' admissions out), and its reservation, recorded
 * twice, is settled once, on the newer record, while the older keeps its estimate.
 */

import { describe, expect, it } from "vitest";
import { type BucketRow, decideRow, emptyRow, resentTake, settleRow, type TakeRequest } from "../../../src/limiter/bucket-row.ts";
import { readBucket } from "../../../src/limiter/bucket-readback.ts";

const ID = "c".repeat(43);
const T0 = 1_700_000_000_000;
const spec = { capacity: 100, windowMs: 60_000 };

/** A lease of this isolate, other requests in its sub-window, a hand-back carried by a call, then `again` sent. */
function admittedInOneWindow(again: (take: TakeRequest) => TakeRequest): number {
  let row: BucketRow = emptyRow;
  let admitted = 0;
  const decide = (take: TakeRequest, at: number) => {
    const result = decideRow(row, take, at);
    row = result.row;
    return result.decision;
  };
  const lease = decide({ id: ID, spec, want: 10, leaseMs: 1000, forRequest: true }, T0);
  admitted += 1;
  const leased = lease.granted - 1;
  for (let i = 0; i < 20; i++) if (decide({ id: ID, spec, want: 1, leaseMs: 0, forRequest: true }, T0 + 1000 + i).allowed) admitted++;
  // The isolate hands its whole lease back on a rider's take; the call carrying it is decided, and its request goes away.
  const rider: TakeRequest = {
    id: ID,
    spec,
    want: 1,
    leaseMs: 1000,
    forRequest: true,
    returned: { start: lease.leaseStart, windowMs: spec.windowMs, count: leased },
  };
  if (decide(rider, T0 + 1100).allowed) admitted++;
  // The rider's request sends its take again once that call went stale; its answer is the one it uses.
  decide(again(rider), T0 + 2101);
  for (let i = 0; i < 200; i++) if (decide({ id: ID, spec, want: 1, leaseMs: 0, forRequest: true }, T0 + 3000 + i).allowed) admitted++;
  return admitted;
}

describe("a take sent again after its carrier went away", () => {
  it("is sent without its lease hand-back: applied twice, it would admit past capacity", () => {
    expect(admittedInOneWindow((take) => take)).toBeGreaterThan(spec.capacity);
    expect(admittedInOneWindow(resentTake)).toBeLessThanOrEqual(spec.capacity);
    expect(resentTake({ id: ID, spec, want: 1, leaseMs: 0, forRequest: true, returned: { start: T0, count: 3 } })).toEqual({
      id: ID,
      spec,
      want: 1,
      leaseMs: 0,
      forRequest: true,
    });
  });

  it("asks for no lease: one granted to the call that went away is counted already, and reaches nobody", () => {
    const quiet: TakeRequest = { id: ID, spec, want: 5, leaseMs: 60_000, forRequest: true };
    expect(resentTake(quiet)).toEqual({ ...quiet, want: 1 });
  });

  it("records its reservation twice, and a settle applies to the newer: the older keeps its estimate", () => {
    const windows = [{ capacity: 100, windowMs: 60_000 }];
    const take: TakeRequest = { id: ID, windows, cost: 30, want: 1, leaseMs: 0, forRequest: true, reserve: "r-1" };
    let row = decideRow(emptyRow, take, T0).row;
    row = decideRow(row, resentTake(take), T0 + 1000).row;
    expect(readBucket(row, windows, T0 + 1000)[0]!.remaining).toBe(40);
    // The response says it cost 5: the newer record's 30 becomes 5, the older's 30 stays until it leaves the window.
    const settled = settleRow(row, { id: ID, reservation: "r-1", cost: 5 }, T0 + 2000);
    expect(settled.applied).toBe(true);
    expect(readBucket(settled.row, windows, T0 + 2000)[0]!.remaining).toBe(65);
    // A settle sent twice would then find the older record: the two still count at least the request's real cost.
    const twice = settleRow(settled.row, { id: ID, reservation: "r-1", cost: 5 }, T0 + 3000);
    expect(readBucket(twice.row, windows, T0 + 3000)[0]!.remaining).toBe(90);
  });
});
