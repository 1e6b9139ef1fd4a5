/** The decision log bound: one line per bucket per second with a suppressed count, bounded memory and rate. */

import { describe, expect, it } from "vitest";
import { DecisionLog } from "../../../src/limiter/decision-log.ts";

describe("DecisionLog", () => {
  it("writes the first limited decision of a bucket, then one line a second carrying how many it left out", () => {
    let now = 10_000;
    const log = new DecisionLog({ now: () => now });
    const verdicts = [];
    for (let i = 0; i < 3_000; i++) {
      verdicts.push(log.decide("bucket-a"));
      now += 1; // 3 s of decisions, one a millisecond
    }
    const lines = verdicts.filter((verdict) => verdict.write);
    expect(lines).toEqual([
      { write: true, suppressed: 0, suppressedElsewhere: 0 },
      { write: true, suppressed: 999, suppressedElsewhere: 0 },
      { write: true, suppressed: 999, suppressedElsewhere: 0 },
    ]);
  });

  it("buckets are bounded separately: a flood on one does not silence another", () => {
    const log = new DecisionLog({ now: () => 0 });
    expect(log.decide("a").write).toBe(true);
    expect(log.decide("a").write).toBe(false);
    expect(log.decide("b").write).toBe(true);
  });

  it("writes at most maxLinesPerSecond lines a second across buckets, and tells the next line how many it left out", () => {
    let now = 0;
    const log = new DecisionLog({ now: () => now, maxLinesPerSecond: 3 });
    const written = Array.from({ length: 10 }, (_, i) => log.decide(`bucket-${i}`)).filter((verdict) => verdict.write);
    expect(written).toHaveLength(3);
    now = 1_000;
    expect(log.decide("bucket-9")).toEqual({ write: true, suppressed: 0, suppressedElsewhere: 7 });
  });

  it("remembers at most maxBuckets buckets; a forgotten bucket's suppressed count goes to the next line", () => {
    let now = 0;
    const log = new DecisionLog({ now: () => now, maxBuckets: 2, maxLinesPerSecond: 1_000 });
    log.decide("a");
    log.decide("a");
    log.decide("a"); // two suppressed on a
    log.decide("b");
    log.decide("c"); // forgets a
    expect(log.size).toBe(2);
    now = 5_000;
    expect(log.decide("d")).toEqual({ write: true, suppressed: 0, suppressedElsewhere: 2 });
  });

  it("10,000 limited decisions on one bucket within 5 s give at most 6 lines, whatever their order in time", () => {
    let now = 123_456;
    const log = new DecisionLog({ now: () => now });
    let lines = 0;
    for (let i = 0; i < 10_000; i++) {
      if (log.decide("flooded").write) lines++;
      now += i % 2 === 0 ? 1 : 0;
    }
    expect(lines).toBeLessThanOrEqual(6);
    expect(lines).toBeGreaterThanOrEqual(5);
  });
});
