import fc from "fast-check";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { bucketId } from "../../../src/limiter/bucket-id.ts";
import { LEASE_MS, QUIET_LEASE, QUIET_LEASE_MS } from "../../../src/limiter/bucket-memory.ts";
import { BUCKET_ENTRY_BYTES, IsolateBuckets, MAX_BUCKET_ID_LENGTH } from "../../../src/limiter/isolate-buckets.ts";
import { emptyWindow, live, take, type LeaseDecision, type WindowState } from "../../../src/limiter/sliding-window.ts";
import { maxInAnyWindow } from "../support/sliding-log.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** An object's answer admitting the request and leasing `granted - 1` more, recorded at `leaseStart`. */
function admitted(granted: number, { leaseStart = 0, remaining = 1_000_000 } = {}): LeaseDecision {
  return { allowed: true, granted, leaseStart, remaining, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 };
}

/** A bucket busy in its first lease period (40 requests, each decided by the object), at the start of the next: `clock.now` is LEASE_MS. */
function leasingBucket(): { buckets: IsolateBuckets; clock: { now: number } } {
  const clock = { now: 0 };
  const buckets = new IsolateBuckets({ now: () => clock.now });
  for (let i = 0; i < 40; i++, clock.now += 5) {
    const consulted = buckets.consult("b", true);
    if ("want" in consulted) buckets.settle("b", { sent: consulted.sent }, admitted(1));
  }
  clock.now = LEASE_MS;
  return { buckets, clock };
}

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * One isolate in front of one object, with requests in flight at once: each step either sends a request
 * (memory answers, or it goes out to the object) or delivers the object's answer to one in flight.
 * `renewAhead`: as the gateway runs it, renewals go out on their own (settled with settleRenewal).
 */
function simulate(
  steps: ReadonlyArray<{ gap: number; deliver: number }>,
  capacity: number,
  windowMs: number,
  answerWithinMs = Number.POSITIVE_INFINITY,
  renewAhead = false,
  quietLease = false,
) {
  let now = 1_700_000_000_000;
  const buckets = new IsolateBuckets({ now: () => now });
  let state: WindowState = emptyWindow;
  const inFlight: Array<{ sent: number; answer: LeaseDecision; renewal: boolean; leaseMs: number }> = [];
  const admitted: number[] = [];
  const deliver = ({ sent, answer, renewal, leaseMs }: { sent: number; answer: LeaseDecision; renewal: boolean; leaseMs: number }) => {
    if (renewal) return buckets.settleRenewal("b", { sent }, answer);
    // An admission the object granted is counted where it decided (below); one the isolate's lease
    // supplies in place of a refusal is counted now.
    if (buckets.settle("b", { sent, leaseMs }, answer).allowed && !answer.allowed) admitted.push(now);
  };
  for (const { gap, deliver: which } of steps) {
    // Answers due back before the clock moves on are delivered first (limiter-client gives up on slower ones).
    for (
      let late = inFlight.findIndex((call) => call.sent + answerWithinMs <= now + gap);
      late >= 0;
      late = inFlight.findIndex((call) => call.sent + answerWithinMs <= now + gap)
    ) {
      deliver(inFlight.splice(late, 1)[0]);
    }
    now += gap;
    if (which > 0 && inFlight.length > 0) {
      deliver(inFlight.splice(which % inFlight.length, 1)[0]);
      continue;
    }
    const consulted = buckets.consult("b", renewAhead, quietLease ? { need: 1, leases: true, quietLease } : undefined);
    if ("decision" in consulted) {
      if (consulted.decision.allowed) admitted.push(now);
      const renewal = consulted.renewal;
      if (renewal) {
        // The renewal reaches the object now and decides no request of its own.
        const result = take(state, now, { capacity, windowMs }, renewal.want, LEASE_MS, renewal.returned, false);
        state = result.state;
        inFlight.push({ sent: renewal.sent, answer: result.decision, renewal: true, leaseMs: renewal.leaseMs });
      }
      continue;
    }
    // The object decides when the request reaches it (now); the isolate learns the answer later.
    // Leased admissions the isolate gives back unused go with the call, as limiter-client.ts sends them.
    const result = take(state, now, { capacity, windowMs }, consulted.want, consulted.leaseMs, consulted.returned);
    state = result.state;
    if (result.decision.allowed) admitted.push(now);
    inFlight.push({ sent: consulted.sent, answer: result.decision, renewal: false, leaseMs: consulted.leaseMs });
  }
  // Whatever is still in flight comes back now.
  for (const call of inFlight.splice(0)) deliver(call);
  return { admitted, stats: buckets.stats, buckets, state: () => state, clock: { get: () => now, set: (value: number) => (now = value) } };
}

// First in the file: the heap measurement is steadier before the property tests have churned the heap.
describe("isolate bucket memory: heap", () => {
  it("costs at most BUCKET_ENTRY_BYTES of heap per remembered bucket (measured after GC)", async () => {
    const count = 20_000;
    const ids = await Promise.all(Array.from({ length: count }, (_, i) => bucketId({ ingress: "local", scope: "route:e/r", action: "a", key: String(i) })));
    const before = heapAfterGc();
    const buckets = new IsolateBuckets({ maxBytes: count * BUCKET_ENTRY_BYTES, now: () => 0 });
    for (const id of ids) buckets.consult(id);
    const perEntry = (heapAfterGc() - before) / count;
    expect(buckets.size).toBe(count);
    expect(perEntry).toBeLessThanOrEqual(BUCKET_ENTRY_BYTES);
  });
});

describe("isolate bucket memory", () => {
  it("never lets more than capacity through in any window, whatever the order answers come back in", () => {
    const steps = fc.array(
      fc.record({
        // mostly busy, now and then a pause longer than a window, after which no stale lease may be used
        gap: fc.oneof({ weight: 60, arbitrary: fc.integer({ min: 0, max: 120 }) }, { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 150_000 }) }),
        deliver: fc.integer({ min: 0, max: 3 }),
      }),
      { minLength: 200, maxLength: 1500 },
    );
    fc.assert(
      fc.property(steps, fc.integer({ min: 1, max: 300 }), fc.constantFrom(60_000, 120_000), fc.boolean(), (trace, capacity, windowMs, renewAhead) => {
        const { admitted } = simulate(trace, capacity, windowMs, Number.POSITIVE_INFINITY, renewAhead);
        expect(maxInAnyWindow(admitted, windowMs)).toBeLessThanOrEqual(capacity);
      }),
      { numRuns: 80 },
    );
  });

  it("never lets more than capacity through with quiet leases, whose admissions are used for up to QUIET_LEASE_MS", () => {
    // Quiet traffic: gaps of seconds, so most calls take a quiet lease; some bursts make the bucket busy in between.
    const steps = fc.array(
      fc.record({
        gap: fc.oneof(
          { weight: 6, arbitrary: fc.integer({ min: 200, max: 6_000 }) },
          { weight: 6, arbitrary: fc.integer({ min: 0, max: 60 }) },
          { weight: 1, arbitrary: fc.integer({ min: 10_000, max: 150_000 }) },
        ),
        deliver: fc.integer({ min: 0, max: 3 }),
      }),
      { minLength: 200, maxLength: 1000 },
    );
    fc.assert(
      fc.property(steps, fc.integer({ min: 1, max: 300 }), fc.constantFrom(60_000, 120_000), fc.boolean(), (trace, capacity, windowMs, renewAhead) => {
        const { admitted, stats } = simulate(trace, capacity, windowMs, Number.POSITIVE_INFINITY, renewAhead, true);
        expect(maxInAnyWindow(admitted, windowMs)).toBeLessThanOrEqual(capacity);
        expect(stats.objectCalls).toBeGreaterThan(0);
      }),
      { numRuns: 80 },
    );
  });

  it("a quiet bucket of a large capacity asks for QUIET_LEASE more admissions for QUIET_LEASE_MS, and uses them for its next requests", () => {
    const clock = { now: 1_700_000_000_000 };
    const buckets = new IsolateBuckets({ now: () => clock.now });
    const quiet = { need: 1, leases: true, quietLease: true };
    const first = buckets.consult("q", true, quiet);
    expect(first).toMatchObject({ want: 1 + QUIET_LEASE, leaseMs: QUIET_LEASE_MS });
    if (!("want" in first)) throw new Error("the first request must call the object");
    expect(buckets.settle("q", first, admitted(1 + QUIET_LEASE)).allowed).toBe(true);
    // One request every 2 s: each is answered from the lease while it lasts, no object call.
    for (let i = 0; i < QUIET_LEASE; i++) {
      clock.now += 2_000;
      expect(buckets.consult("q", true, quiet)).toMatchObject({ decision: { allowed: true } });
    }
    expect(buckets.stats).toMatchObject({ objectCalls: 1, leasedAdmissions: QUIET_LEASE });
    // Used up: the next request calls the object again, for another quiet lease.
    clock.now += 2_000;
    expect(buckets.consult("q", true, quiet)).toMatchObject({ want: 1 + QUIET_LEASE, leaseMs: QUIET_LEASE_MS });
  });

  it("a quiet lease is not used past QUIET_LEASE_MS: what it still holds goes back with the next call", () => {
    const clock = { now: 1_700_000_000_000 };
    const buckets = new IsolateBuckets({ now: () => clock.now });
    const quiet = { need: 1, leases: true, quietLease: true };
    const first = buckets.consult("q", true, quiet);
    if (!("want" in first)) throw new Error("the first request must call the object");
    buckets.settle("q", first, admitted(1 + QUIET_LEASE, { leaseStart: 42_000 }));
    clock.now += QUIET_LEASE_MS;
    expect(buckets.consult("q", true, quiet)).toMatchObject({ want: 1 + QUIET_LEASE, returned: { start: 42_000, count: QUIET_LEASE } });
  });

  it("without a quiet lease (a small capacity, or a form that is never leased) a quiet bucket asks for its one admission", () => {
    const buckets = new IsolateBuckets({ now: () => 1_700_000_000_000 });
    expect(buckets.consult("a", true, { need: 1, leases: true })).toMatchObject({ want: 1 });
    expect(buckets.consult("b", true)).toMatchObject({ want: 1 });
    expect(buckets.consult("c", true, { need: 1, leases: false, quietLease: true })).toMatchObject({ want: 1 });
  });

  it("leaves no unused leased admission counted: once the leases have expired, one more call hands every one back", () => {
    const steps = fc.array(
      fc.record({
        gap: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 40 }) }, { weight: 1, arbitrary: fc.integer({ min: 200, max: 3_000 }) }),
        deliver: fc.integer({ min: 0, max: 3 }),
      }),
      { minLength: 50, maxLength: 600 },
    );
    fc.assert(
      fc.property(steps, fc.integer({ min: 20, max: 2_000 }), fc.boolean(), (trace, capacity, renewAhead) => {
        // A window longer than any trace, so nothing expires: the object's count must equal the admissions.
        const windowMs = 3_600_000;
        // Answers come back within half a lease period (a slower one may be past its own deadline; see the next test).
        const run = simulate(trace, capacity, windowMs, LEASE_MS / 2, renewAhead);
        run.clock.set(run.clock.get() + LEASE_MS);
        const consulted = run.buckets.consult("b");
        if ("decision" in consulted) {
          expect(consulted.decision.allowed).toBe(false);
          expect(live(run.state(), run.clock.get(), windowMs).reduce((sum, sub) => sum + sub.count, 0)).toBe(run.admitted.length);
          return;
        }
        const { state, decision } = take(run.state(), run.clock.get(), { capacity, windowMs }, 1, LEASE_MS, consulted.returned);
        const counted = live(state, run.clock.get(), windowMs).reduce((sum, sub) => sum + sub.count, 0);
        expect(counted).toBe(run.admitted.length + (decision.allowed ? 1 : 0));
      }),
      { numRuns: 150 },
    );
  });

  it("asks for one lease at a time: while one is in flight, other requests that reach the object ask for one admission", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    const answer = (granted: number) => admitted(granted, { remaining: 500 });
    for (let i = 0; i < 30; i++, now += 10) {
      const consulted = buckets.consult("b");
      if ("want" in consulted) buckets.settle("b", { sent: consulted.sent }, answer(1));
    }
    now = LEASE_MS;
    const lease = buckets.consult("b");
    expect(lease).toEqual({ want: 30, sent: LEASE_MS, leaseMs: LEASE_MS });
    now += 1;
    expect(buckets.consult("b")).toEqual({ want: 1, sent: LEASE_MS + 1, leaseMs: LEASE_MS });
    buckets.settle("b", { sent: LEASE_MS + 1 }, answer(1));
    expect(buckets.consult("b")).toMatchObject({ want: 1 }); // the lease request is still in flight
    buckets.settle("b", { sent: LEASE_MS }, answer(3));
    // A bucket of 30 requests a period is not busy enough to renew early: its 2 leased admissions are used first.
    expect(buckets.consult("b")).toMatchObject({ decision: { allowed: true } });
    expect(buckets.consult("b")).toMatchObject({ decision: { allowed: true } });
    expect(buckets.consult("b")).toMatchObject({ want: 30 }); // used up: the next lease may be asked for
  });

  it("renews a busy bucket's lease early: the new lease replaces the old one, whose remaining admissions go back with the next call", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    const answer = (granted: number, leaseStart: number) => admitted(granted, { leaseStart });
    for (let i = 0; i < 40; i++, now += 5) {
      const consulted = buckets.consult("b");
      if ("want" in consulted) buckets.settle("b", { sent: consulted.sent }, answer(1, 0));
    }
    now = LEASE_MS;
    expect(buckets.consult("b")).toEqual({ want: 40, sent: LEASE_MS, leaseMs: LEASE_MS });
    buckets.settle("b", { sent: LEASE_MS }, answer(40, 2_000));
    let leased = 0;
    let renewal = buckets.consult("b");
    while ("decision" in renewal) {
      leased++;
      renewal = buckets.consult("b");
    }
    expect(leased).toBe(39 - 10); // renewed once a quarter of the demand (10) was left
    expect(renewal).toEqual({ want: 40, sent: LEASE_MS, leaseMs: LEASE_MS });
    for (let i = 0; i < 5; i++) expect(buckets.consult("b")).toMatchObject({ decision: { allowed: true } }); // while it is in flight
    now += 20;
    buckets.settle("b", { sent: LEASE_MS }, answer(40, 3_000));
    // The new lease's 39 are used now; the old lease's 5 left are handed back with the next object call.
    let next = buckets.consult("b");
    let fromNewLease = 0;
    while ("decision" in next) {
      fromNewLease++;
      next = buckets.consult("b");
    }
    expect(fromNewLease).toBeGreaterThan(0);
    expect(fromNewLease).toBeLessThanOrEqual(39);
    expect(next).toMatchObject({ returned: { start: 2_000, count: 5 } });
  });

  it("renews a busy bucket's lease ahead when it can: the request that finds the renewal due is answered from the lease, and the renewal's admissions are all leased", () => {
    const { buckets } = leasingBucket();
    expect(buckets.consult("b", true)).toEqual({ want: 40, sent: LEASE_MS, leaseMs: LEASE_MS });
    buckets.settle("b", { sent: LEASE_MS }, admitted(40, { leaseStart: 2_000 }));
    let consulted = buckets.consult("b", true);
    let answered = 0;
    while (!("renewal" in consulted && consulted.renewal)) {
      expect(consulted).toMatchObject({ decision: { allowed: true } });
      answered++;
      consulted = buckets.consult("b", true);
    }
    // The request that found the renewal due (a quarter of the demand, 10, left) took one of them.
    expect(answered).toBe(39 - 10);
    expect(consulted).toEqual({ decision: expect.objectContaining({ allowed: true }), renewal: { want: 40, sent: LEASE_MS, leaseMs: LEASE_MS } });
    // While the renewal is out, the remaining 9 are used and nothing else is sent.
    for (let i = 0; i < 9; i++) expect(buckets.consult("b", true)).toEqual({ decision: expect.objectContaining({ allowed: true }) });
    buckets.settleRenewal("b", { sent: LEASE_MS }, admitted(40, { leaseStart: 3_000, remaining: 500 }));
    // All 40 of the renewal are leased (it decided no request of its own): one used, 39 held, 500 at the object.
    expect(buckets.consult("b", true)).toEqual({ decision: expect.objectContaining({ allowed: true, remaining: 500 + 39 }) });
    expect(buckets.stats.objectCalls).toBe(40 + 1 + 1); // the first period one by one, the lease, the renewal
  });

  it("a renewal asked for ahead that finds the bucket full: admissions still leased are used first, then requests are refused from memory", () => {
    const { buckets } = leasingBucket();
    buckets.consult("b", true);
    buckets.settle("b", { sent: LEASE_MS }, admitted(40, { leaseStart: 2_000 }));
    let consulted = buckets.consult("b", true);
    while (!("renewal" in consulted && consulted.renewal)) consulted = buckets.consult("b", true);
    buckets.settleRenewal(
      "b",
      { sent: LEASE_MS },
      { allowed: false, granted: 0, leaseStart: 0, remaining: 0, retryAfterMs: 30_000, resetMs: 60_000, refillMs: 30_000 },
    );
    for (let i = 0; i < 9; i++) expect(buckets.consult("b", true)).toMatchObject({ decision: { allowed: true } });
    const calls = buckets.stats.objectCalls;
    expect(buckets.consult("b", true)).toEqual({ decision: { allowed: false, remaining: 0, retryAfterMs: 30_000, resetMs: 30_000, refillMs: 30_000 } });
    expect(buckets.stats.objectCalls).toBe(calls);
  });

  it("a renewal asked for ahead that never comes back: requests go to the object one by one, and a lease may be asked for again after a lease period", () => {
    const { buckets, clock } = leasingBucket();
    buckets.consult("b", true);
    buckets.settle("b", { sent: LEASE_MS }, admitted(40, { leaseStart: 2_000 }));
    let consulted = buckets.consult("b", true);
    while (!("renewal" in consulted && consulted.renewal)) consulted = buckets.consult("b", true);
    const renewalSent = clock.now;
    for (let i = 0; i < 9; i++) buckets.consult("b", true);
    clock.now += 1;
    expect(buckets.consult("b", true)).toMatchObject({ want: 1 }); // lease used up, the renewal lost
    clock.now = renewalSent + LEASE_MS;
    expect(buckets.consult("b", true)).toMatchObject({ want: expect.any(Number) });
    expect((buckets.consult("b", true) as { want: number }).want).toBe(1); // that one is the lease in flight
  });

  it("a bucket that turns busy asks for a lease within its first lease period, sized by its requests so far", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    const wants: number[] = [];
    for (let i = 0; i < 200; i++, now += 0.5) {
      const consulted = buckets.consult("b");
      if ("want" in consulted) {
        wants.push(consulted.want);
        buckets.settle(
          "b",
          { sent: consulted.sent },
          { allowed: true, granted: 1, leaseStart: 0, remaining: 1_000_000, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 },
        );
      }
    }
    // One by one up to 31 requests (a short burst leaves a lease unused), then a lease of what the epoch has seen.
    expect(wants.slice(0, 31).every((want) => want === 1)).toBe(true);
    expect(wants[31]).toBe(32);
  });

  it("renews a lease early when a quarter of its period is left, whatever it still holds", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    const answer = (granted: number) => admitted(granted, { remaining: 1_000 });
    for (let i = 0; i < 40; i++, now += 20) {
      const consulted = buckets.consult("b");
      if ("want" in consulted) buckets.settle("b", { sent: consulted.sent }, answer(1));
    }
    now = LEASE_MS;
    buckets.settle("b", { sent: (buckets.consult("b") as { sent: number }).sent }, answer(40));
    // 39 leased, usable until 2·LEASE_MS − 100; a quarter of the period before that, the lease is renewed.
    now = 2 * LEASE_MS - 100 - LEASE_MS / 4 - 1;
    expect(buckets.consult("b")).toMatchObject({ decision: { allowed: true } });
    now += 1;
    expect(buckets.consult("b")).toEqual({ want: 40, sent: now, leaseMs: LEASE_MS });
  });

  it("a lease request that never comes back holds back the next one for one lease period only", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    for (let i = 0; i < 10; i++, now += 50) buckets.consult("b"); // answers lost (timeouts)
    now = LEASE_MS;
    expect(buckets.consult("b")).toMatchObject({ want: 10 });
    now = 2 * LEASE_MS - 1;
    expect(buckets.consult("b")).toMatchObject({ want: 1 });
    now = 2 * LEASE_MS;
    expect(buckets.consult("b")).toMatchObject({ want: 2 });
  });

  it("a bucket known to be limited still makes one call to hand back an expired lease's unused admissions", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    for (let i = 0; i < 10; i++, now += 50) {
      const consulted = buckets.consult("b");
      if ("want" in consulted)
        buckets.settle(
          "b",
          { sent: consulted.sent },
          { allowed: true, granted: 1, leaseStart: 0, remaining: 100, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 },
        );
    }
    now = LEASE_MS;
    expect(buckets.consult("b")).toMatchObject({ want: 10 });
    const other = buckets.consult("b"); // a concurrent request
    if (!("want" in other)) throw new Error("expected an object call");
    buckets.settle("b", { sent: LEASE_MS }, { allowed: true, granted: 5, leaseStart: 61_000, remaining: 20, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 });
    expect(buckets.consult("b")).toMatchObject({ decision: { allowed: true } }); // uses one of the 4 leased
    now = 2 * LEASE_MS; // the other 3 expire unused, then the concurrent request comes back limited
    expect(
      buckets.settle(
        "b",
        { sent: other.sent },
        { allowed: false, granted: 0, leaseStart: 0, remaining: 0, retryAfterMs: 30_000, resetMs: 60_000, refillMs: 30_000 },
      ),
    ).toMatchObject({
      allowed: false,
    });
    // The one used goes back too, to be counted from this call rather than from the lease's end.
    expect(buckets.consult("b")).toEqual({
      want: 3,
      sent: 2 * LEASE_MS,
      leaseMs: LEASE_MS,
      returned: { start: 61_000, count: 3, used: 1 },
    });
    expect(buckets.consult("b")).toMatchObject({ decision: { allowed: false } }); // nothing left to hand back
  });

  it("a lease that comes back after its own deadline is handed back whole", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    for (let i = 0; i < 10; i++, now += 50) {
      const consulted = buckets.consult("b");
      if ("want" in consulted)
        buckets.settle(
          "b",
          { sent: consulted.sent },
          { allowed: true, granted: 1, leaseStart: 0, remaining: 100, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 },
        );
    }
    now = LEASE_MS;
    expect(buckets.consult("b")).toMatchObject({ want: 10, sent: LEASE_MS });
    now = 2 * LEASE_MS;
    expect(
      buckets.settle("b", { sent: LEASE_MS }, { allowed: true, granted: 10, leaseStart: 61_000, remaining: 80, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 }),
    ).toMatchObject({
      allowed: true,
      remaining: 80,
    });
    expect(buckets.consult("b")).toMatchObject({ returned: { start: 61_000, count: 9 } });
  });

  it("hands back the unused admissions of an expired lease with its next object call", () => {
    let now = 1_700_000_000_000;
    const buckets = new IsolateBuckets({ now: () => now });
    const spec = { capacity: 1000, windowMs: 60_000 };
    let state: WindowState = emptyWindow;
    const ask = () => {
      const consulted = buckets.consult("b");
      if ("decision" in consulted) return consulted.decision;
      const result = take(state, now, spec, consulted.want, LEASE_MS, consulted.returned);
      state = result.state;
      return buckets.settle("b", { sent: consulted.sent }, result.decision);
    };
    for (let i = 0; i < 30; i++, now += 10) ask(); // busy: 30 requests in the first lease period
    now = 1_700_000_001_000;
    expect(ask()).toMatchObject({ allowed: true, remaining: 969 }); // leases 29 more, uses none of them
    now += 5_000; // the lease has expired: its 29 unused admissions go back with the next call
    expect(ask()).toMatchObject({ allowed: true, remaining: 1000 - 31 - 1 });
  });

  it("answers a limited bucket from memory until its retry time, then asks the object again", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    const first = buckets.consult("b");
    expect(first).toEqual({ want: 1, sent: 0, leaseMs: LEASE_MS });
    expect(
      buckets.settle("b", { sent: 0 }, { allowed: false, granted: 0, leaseStart: 0, remaining: 0, retryAfterMs: 42_000, resetMs: 60_000, refillMs: 42_000 }),
    ).toMatchObject({ allowed: false, retryAfterMs: 42_000 });
    now = 2_000;
    expect(buckets.consult("b")).toEqual({ decision: { allowed: false, remaining: 0, retryAfterMs: 40_000, resetMs: 40_000, refillMs: 40_000 } });
    now = 42_000;
    expect(buckets.consult("b")).toMatchObject({ sent: 42_000 });
    expect(buckets.stats).toMatchObject({ objectCalls: 2, renewalsAhead: 0, cachedRejections: 1, leasedAdmissions: 0 });
  });

  it("a bucket busy in the previous lease period asks for that many admissions, and uses them before its deadline", () => {
    let now = 0;
    const buckets = new IsolateBuckets({ now: () => now });
    for (let i = 0; i < 10; i++) {
      const consulted = buckets.consult("b");
      if ("want" in consulted)
        buckets.settle(
          "b",
          { sent: consulted.sent },
          { allowed: true, granted: 1, leaseStart: 0, remaining: 100, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 },
        );
      now += 50;
    }
    now = LEASE_MS;
    const consulted = buckets.consult("b");
    expect(consulted).toEqual({ want: 10, sent: LEASE_MS, leaseMs: LEASE_MS });
    buckets.settle("b", { sent: LEASE_MS }, { allowed: true, granted: 10, leaseStart: 0, remaining: 90, retryAfterMs: 0, resetMs: 0, refillMs: 60_000 });
    for (let i = 0; i < 9; i++) expect(buckets.consult("b")).toMatchObject({ decision: { allowed: true } });
    expect(buckets.consult("b")).toMatchObject({ want: 10 });
    expect(buckets.stats.leasedAdmissions).toBe(9);
  });

  it("is bounded by bytes: past maxBytes the least recently used bucket is forgotten", () => {
    const buckets = new IsolateBuckets({ maxBytes: 10 * BUCKET_ENTRY_BYTES, now: () => 0 });
    buckets.consult("keep");
    for (let i = 0; i < 1_000; i++) {
      buckets.consult(`id-${i}`);
      buckets.consult("keep");
    }
    expect(buckets.size).toBe(10);
  });

  it("refuses a bucket id longer than a hash: raw client keys never name memory", () => {
    const buckets = new IsolateBuckets();
    expect(() => buckets.consult("k".repeat(MAX_BUCKET_ID_LENGTH + 1))).toThrow(RangeError);
  });
});

describe("bucket ids", () => {
  it("are 43 characters whatever the key, and differ when any part differs", async () => {
    const id = await bucketId({ ingress: "local", scope: "route:e/r", action: "a", key: "x".repeat(60_000) });
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const others = await Promise.all([
      bucketId({ ingress: "other", scope: "route:e/r", action: "a", key: "k" }),
      bucketId({ ingress: "local", scope: "route:e/s", action: "a", key: "k" }),
      bucketId({ ingress: "local", scope: "route:e/r", action: "b", key: "k" }),
      bucketId({ ingress: "local", scope: "route:e/r", action: "a", key: "l" }),
      bucketId({ ingress: "local", scope: "route:e/r", action: "a", key: "k" }),
    ]);
    expect(new Set(others).size).toBe(5);
  });

  it("1,000 different 60 KB keys leave the isolate's memory holding fixed-size ids only", async () => {
    const buckets = new IsolateBuckets({ now: () => 0 });
    const before = heapAfterGc();
    for (let i = 0; i < 1_000; i++) {
      const id = await bucketId({ ingress: "local", scope: "route:e/r", action: "per-key", key: `${i}:`.padEnd(60_000, "k") });
      buckets.consult(id);
    }
    const grown = heapAfterGc() - before;
    expect(buckets.size).toBe(1_000);
    // 1,000 keys of 60 KB held as they came would be 60 MB; fixed ids cost about BUCKET_ENTRY_BYTES each
    // (measured exactly in the test above), so allow 2 MiB for the rest of what a loop leaves on the heap.
    expect(grown).toBeLessThan(2 * 1024 * 1024);
  });
});
