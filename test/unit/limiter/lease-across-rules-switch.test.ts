/**
 * A lease granted under one tier's rules whose answer reaches the isolate once the bucket is decided by other rules
 * (a concurrent request switched them, or the isolate forgot the bucket meanwhile): its admissions were counted
 * against the old capacity, so they are handed back, never used under the new one. The isolate's real bucket
 * memory in front of the object's real row functions, on one clock.
 */

import { describe, expect, it } from "vitest";
import { readBucket } from "../../../src/limiter/bucket-readback.ts";
import { type BucketRow, decideRow, emptyRow } from "../../../src/limiter/bucket-row.ts";
import { LEASE_MS, QUIET_LEASE } from "../../../src/limiter/bucket-memory.ts";
import { BUCKET_ENTRY_BYTES, IsolateBuckets, type ObjectCall } from "../../../src/limiter/isolate-buckets.ts";
import type { LeaseDecision, WindowSpec } from "../../../src/limiter/sliding-window.ts";

const ID = "q".repeat(43);
const large = { capacity: 1_000, windowMs: 60_000 };
const lowered = { capacity: 100, windowMs: 60_000 };
const quietTier = { need: 1, rulesKey: "large", leases: true, quietLease: true };
const loweredTier = { need: 1, rulesKey: "lowered", leases: true };

/** One object row holding `used` admissions, and requests sent to it as limiter-client.ts sends them. */
function bucketHolding(used: number, clock: { now: number }) {
  let row: BucketRow = emptyRow;
  for (let i = 0; i < used; i++) row = decideRow(row, { id: ID, spec: large, want: 1, leaseMs: 0, forRequest: true }, clock.now).row;
  const send = (spec: WindowSpec, call: ObjectCall): LeaseDecision => {
    const taken = decideRow(row, { id: ID, spec, want: call.want, leaseMs: call.leaseMs, returned: call.returned, forRequest: true }, clock.now);
    row = taken.row;
    return taken.decision;
  };
  return { send, used: () => readBucket(row, [lowered], clock.now)[0]!.used };
}

function objectCall(consulted: ReturnType<IsolateBuckets["consult"]>): ObjectCall {
  if (!("want" in consulted)) throw new Error("the request must call the object");
  return consulted;
}

describe("a lease answered after the bucket's rules changed", () => {
  it("a quiet lease granted under the old tier is not used under the lowered one, and goes back with the next call", () => {
    const clock = { now: 1_700_000_000_000 };
    const buckets = new IsolateBuckets({ now: () => clock.now });
    const object = bucketHolding(500, clock);
    // A quiet request under the large tier leases QUIET_LEASE more; before its answer is back, a request under
    // the lowered tier (an override, applied meanwhile) goes out too and is refused: 501 are counted, 100 allowed.
    const quiet = objectCall(buckets.consult(ID, false, quietTier));
    const quietAnswer = object.send(large, quiet);
    expect(quietAnswer).toMatchObject({ allowed: true, granted: 1 + QUIET_LEASE });
    clock.now += 5;
    const underLowered = objectCall(buckets.consult(ID, false, loweredTier));
    const refusal = object.send(lowered, underLowered);
    expect(refusal.allowed).toBe(false);

    clock.now += 5;
    expect(buckets.settle(ID, { ...quiet, rulesKey: "large" }, quietAnswer).allowed).toBe(true);
    expect(buckets.settle(ID, { ...underLowered, rulesKey: "lowered" }, refusal).allowed).toBe(false);
    // The window holds five times the lowered capacity: nothing more is admitted, from memory or otherwise.
    let admitted = 0;
    for (let i = 0; i < QUIET_LEASE; i++) {
      clock.now += 1_000;
      const consulted = buckets.consult(ID, false, loweredTier);
      if ("decision" in consulted) admitted += consulted.decision.allowed ? 1 : 0;
      else if (buckets.settle(ID, { ...consulted, rulesKey: "lowered" }, object.send(lowered, consulted)).allowed) admitted++;
    }
    expect(admitted).toBe(0);
    expect(object.used()).toBe(501);
  });

  it("a lease answered after the isolate forgot the bucket is not used once the bucket is decided by other rules", () => {
    const clock = { now: 1_700_000_000_000 };
    const buckets = new IsolateBuckets({ now: () => clock.now, maxBytes: BUCKET_ENTRY_BYTES });
    const object = bucketHolding(500, clock);
    const quiet = objectCall(buckets.consult(ID, false, quietTier));
    const quietAnswer = object.send(large, quiet);
    buckets.consult("another bucket", false, { need: 1, leases: false }); // the memory holds one bucket: this one is forgotten
    clock.now += 5;
    expect(buckets.settle(ID, { ...quiet, rulesKey: "large" }, quietAnswer).allowed).toBe(true);
    clock.now += 5;
    const next = buckets.consult(ID, false, loweredTier);
    expect(next).toMatchObject({ want: 1, returned: { start: quietAnswer.leaseStart, count: QUIET_LEASE } });
    expect(object.send(lowered, objectCall(next)).allowed).toBe(false);
  });

  it("a renewal sent under the old rules is not used under the new ones", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    const busy = { need: 1, rulesKey: "large", leases: true };
    const answer = (granted: number, leaseStart: number): LeaseDecision => ({
      allowed: true,
      granted,
      leaseStart,
      remaining: 900,
      retryAfterMs: 0,
      resetMs: 0,
      refillMs: 60_000,
    });
    // Busy for a lease period (40 requests), then leasing: the renewal goes out ahead once a quarter is left.
    for (let i = 0; i < 40; i++, now += 5) {
      const consulted = buckets.consult(ID, true, busy);
      if ("want" in consulted) buckets.settle(ID, { ...consulted, rulesKey: "large" }, answer(1, 0));
    }
    now = LEASE_MS;
    const first = objectCall(buckets.consult(ID, true, busy));
    buckets.settle(ID, { ...first, rulesKey: "large" }, answer(first.want, 61_000));
    let renewal: ObjectCall | undefined;
    while (!renewal) {
      const consulted = buckets.consult(ID, true, busy);
      if (!("decision" in consulted)) throw new Error("the lease answers until the renewal is due");
      renewal = consulted.renewal;
    }
    const underLowered = objectCall(buckets.consult(ID, true, loweredTier));
    expect(underLowered.returned?.count).toBeGreaterThan(0); // what the old lease held goes back
    buckets.settleRenewal(ID, { ...renewal, rulesKey: "large" }, answer(40, 62_000));
    const next = buckets.consult(ID, true, loweredTier);
    expect(next).toMatchObject({ returned: { start: 62_000, count: 40 } });
  });

  it("a hand-back reaching a window of another length is not applied there, where its start holds others' admissions", () => {
    const T0 = 1_700_000_000_000; // a multiple of both windows' sub-window lengths (1 s and 2 s)
    const minute = { capacity: 1_000, windowMs: 60_000 };
    const twoMinutes = { capacity: 1_000, windowMs: 120_000 };
    const take = (row: BucketRow, request: Omit<Parameters<typeof decideRow>[1], "id">, now: number) => decideRow(row, { id: ID, ...request }, now);
    // A tier of both windows keeps them apart in the row; then this isolate's quiet lease under the minute, recorded
    // in the minute's sub-window at T0 + 60 s, and another isolate's under two minutes, in that window's sub-window
    // starting at T0 + 60 s too.
    let row = take(emptyRow, { windows: [minute, twoMinutes], cost: 1, want: 1, leaseMs: 0, forRequest: true }, T0).row;
    const mine = take(row, { spec: minute, want: 5, leaseMs: 60_000, forRequest: true }, T0);
    expect(mine.decision).toMatchObject({ granted: 5, leaseStart: T0 + 60_000, leaseWindowMs: 60_000 });
    row = mine.row;
    const others = take(row, { spec: twoMinutes, want: 5, leaseMs: 60_000, forRequest: true }, T0 + 500);
    expect(others.decision).toMatchObject({ granted: 5, leaseStart: T0 + 60_000, leaseWindowMs: 120_000 });
    row = others.row;
    // This isolate moves to the two-minute tier and hands its unused four back with its first call there.
    const clock = { now: T0 + 1_000 };
    const buckets = new IsolateBuckets({ now: () => clock.now });
    const first = buckets.consult(ID, false, { need: 1, rulesKey: "minute", leases: true, quietLease: true });
    if (!("want" in first)) throw new Error("the first request must call the object");
    buckets.settle(ID, { ...first, rulesKey: "minute" }, mine.decision);
    const switched = buckets.consult(ID, false, { need: 1, rulesKey: "two minutes", leases: true });
    if (!("want" in switched)) throw new Error("a switched bucket must call the object");
    expect(switched.returned).toEqual({ start: T0 + 60_000, windowMs: 60_000, count: 4 });
    const after = take(row, { spec: twoMinutes, want: 1, leaseMs: 0, returned: switched.returned, forRequest: true }, clock.now);
    // The two-minute window still counts everything it was given: the tier's request, the other isolate's request and
    // lease, and this request. Taking the four out of it would have left the other isolate's lease uncounted.
    expect(readBucket(after.row, [twoMinutes], clock.now)[0]!.used).toBe(1 + 5 + 1);
  });
});
