/**
 * An override changes a busy bucket's rules: the isolate hands back the admissions it holds leased under the old
 * ones (taken against the old capacity), so the object counts only what was admitted, and the new capacity decides
 * the next request. The isolate's real bucket memory in front of the object's real row functions, on one clock.
 */

import { describe, expect, it } from "vitest";
import { readBucket } from "../../../src/limiter/bucket-readback.ts";
import { type BucketRow, decideRow, emptyRow } from "../../../src/limiter/bucket-row.ts";
import { LEASE_MS } from "../../../src/limiter/bucket-memory.ts";
import { IsolateBuckets } from "../../../src/limiter/isolate-buckets.ts";
import type { WindowSpec } from "../../../src/limiter/sliding-window.ts";

const ID = "b".repeat(43);

function bucketAt(clock: { now: number }) {
  const buckets = new IsolateBuckets({ now: () => clock.now });
  let row: BucketRow = emptyRow;
  let admitted = 0;
  /** One request decided under `rule` named `rulesKey`, as limiter-client.ts sends it (no renewals ahead). */
  const request = (rule: WindowSpec, rulesKey: string): { allowed: boolean; returned: number } => {
    const consulted = buckets.consult(ID, false, { need: 1, rulesKey, leases: true });
    if ("decision" in consulted) {
      if (consulted.decision.allowed) admitted++;
      return { allowed: consulted.decision.allowed, returned: 0 };
    }
    const taken = decideRow(row, { id: ID, spec: rule, want: consulted.want, leaseMs: LEASE_MS, returned: consulted.returned, forRequest: true }, clock.now);
    row = taken.row;
    const decision = buckets.settle(ID, { sent: consulted.sent }, taken.decision);
    if (decision.allowed) admitted++;
    return { allowed: decision.allowed, returned: consulted.returned?.count ?? 0 };
  };
  return { request, row: () => row, admitted: () => admitted };
}

describe("an override on a busy bucket", () => {
  it("hands back the lease taken under the old capacity and decides by the new one", () => {
    const clock = { now: 1_700_000_000_000 };
    const bucket = bucketAt(clock);
    const base = { capacity: 1000, windowMs: 60_000 };
    const lowered = { capacity: 120, windowMs: 60_000 };
    // Busy: 40 requests a second for 2 s, so the isolate takes leases.
    for (let i = 0; i < 80; i++) {
      clock.now += 25;
      expect(bucket.request(base, "base").allowed).toBe(true);
    }
    const leasedBefore = readBucket(bucket.row(), [base], clock.now)[0]!.used;
    expect(leasedBefore).toBeGreaterThan(bucket.admitted());

    clock.now += 25;
    // The first request under the override goes to the object, handing back what the old lease still held.
    const first = bucket.request(lowered, "override");
    expect(first.returned).toBeGreaterThan(0);
    const after = readBucket(bucket.row(), [lowered], clock.now)[0]!;
    expect(after.used).toBeLessThan(leasedBefore + 1);
    expect(after.used).toBeGreaterThanOrEqual(bucket.admitted());
    // From here the new capacity decides: admissions stop at it (the count kept from before included).
    let refused = 0;
    for (let i = 0; i < 80; i++) {
      clock.now += 25;
      if (!bucket.request(lowered, "override").allowed) refused++;
    }
    expect(refused).toBeGreaterThan(0);
    expect(bucket.admitted()).toBeLessThanOrEqual(lowered.capacity);
    expect(readBucket(bucket.row(), [lowered], clock.now)[0]!.used).toBeGreaterThanOrEqual(bucket.admitted());
  });
});
