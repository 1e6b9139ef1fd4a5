/**
 * Quiet leases (QUIET_LEASE admissions for QUIET_LEASE_MS) against the exact oracle: several isolates' real bucket
 * memories in front of one object's real row functions, answers delivered late, out of order or never, each
 * isolate switching between a quiet tier, a tier too small for quiet leases and forms that never lease, and
 * memories forgotten under a bound of a few buckets. Every admission is checked against the sliding log: the
 * 60 s window it was admitted in holds at most the capacity of the rules that admitted it.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BucketRow, decideRow, emptyRow, type TakeRequest } from "../../../src/limiter/bucket-row.ts";
import { QUIET_LEASE_MIN_CAPACITY } from "../../../src/limiter/bucket-memory.ts";
import { BUCKET_ENTRY_BYTES, IsolateBuckets } from "../../../src/limiter/isolate-buckets.ts";
import type { LeaseDecision } from "../../../src/limiter/sliding-window.ts";
import { leasable, type LimitSpec } from "../../../src/limiter/window-rules.ts";
import { answerStep, forgetStep, type InFlight, overAdmission, type Rules, switchStep, takeOf } from "../support/lease-trace.ts";

const WINDOW_MS = 60_000;
const ID = "q".repeat(43);

/**
 * A quiet tier, a busy one of a smaller capacity, several windows and a calendar period: all share the bucket's
 * 60 s count (the row keeps it by window length), the last two are never leased. `forceQuiet`: quiet leases below
 * QUIET_LEASE_MIN_CAPACITY too, so a short trace reaches the limit.
 */
function rulesOf(large: number, small: number, forceQuiet: boolean): Rules[] {
  const sliding = (capacity: number) => ({ capacity, windowMs: WINDOW_MS });
  const of = (key: string, limit: Omit<LimitSpec, "key" | "cost">, capacity: number, quiet: boolean): Rules => {
    const full = { ...limit, cost: 1, key };
    return { limit: full, capacity, quiet: leasable(full) && (quiet || capacity >= QUIET_LEASE_MIN_CAPACITY) };
  };
  return [
    of("quiet", { windows: [sliding(large)] }, large, forceQuiet),
    of("small", { windows: [sliding(small)] }, small, false),
    of("several", { windows: [sliding(large), { capacity: small, windowMs: 1_000 }] }, large, false),
    of("calendar", { windows: [sliding(small), { capacity: 100 * large, period: "hour", offsetMinutes: 0 }] }, small, false),
  ];
}

type Step =
  | { readonly kind: "request"; readonly isolate: number; readonly renewAhead: boolean }
  | { readonly kind: "tick"; readonly gap: number }
  | { readonly kind: "answer"; readonly pick: number; readonly lost: boolean }
  | { readonly kind: "switch"; readonly isolate: number; readonly rules: number }
  | { readonly kind: "forget"; readonly isolate: number; readonly other: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ kind: fc.constant("request" as const), isolate: fc.nat(2), renewAhead: fc.boolean() }) },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      gap: fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: 0, max: 40 }) },
        { weight: 3, arbitrary: fc.integer({ min: 200, max: 4_000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 8_000, max: 70_000 }) },
      ),
    }),
  },
  { weight: 6, arbitrary: answerStep },
  { weight: 1, arbitrary: switchStep(3) },
  { weight: 1, arbitrary: forgetStep },
);

interface Admission {
  readonly at: number;
  readonly capacity: number;
  /** The rules that admitted it, and by what: the object, a lease in memory, or a lease taken in for a refusal. */
  readonly rules: string;
  readonly by: "object" | "memory" | "settle";
}

/**
 * Runs `steps` against one bucket seen by `isolates` isolates (each remembering at most `entries` buckets), every
 * isolate starting under `rules[0]`. Returns the admissions in time order and every `remaining` a client was told.
 */
function simulate(steps: readonly Step[], rules: readonly Rules[], isolates: number, entries: number) {
  let now = 1_700_000_000_000;
  const memories = Array.from({ length: isolates }, () => new IsolateBuckets({ now: () => now, maxBytes: entries * BUCKET_ENTRY_BYTES }));
  const current = memories.map(() => rules[0]!);
  let row: BucketRow = emptyRow;
  const inFlight: InFlight[] = [];
  const admissions: Admission[] = [];
  const told: Array<{ remaining: number; capacity: number }> = [];
  const decide = (take: TakeRequest): LeaseDecision => {
    const result = decideRow(row, take, now);
    row = result.row;
    return result.decision;
  };
  const answer = ({ isolate, call, answer: decision, rules: decidedBy, renewal }: InFlight) => {
    const memory = memories[isolate]!;
    if (renewal) return memory.settleRenewal(ID, { ...call, rulesKey: decidedBy.limit.key }, decision);
    const settled = memory.settle(ID, { ...call, rulesKey: decidedBy.limit.key }, decision);
    // An admission the object granted is counted where it decided; one a lease supplies in place of a refusal, now.
    if (settled.allowed && !decision.allowed) admissions.push({ at: now, capacity: decidedBy.capacity, rules: decidedBy.limit.key!, by: "settle" });
    if (settled.allowed) told.push({ remaining: settled.remaining, capacity: decidedBy.capacity });
  };
  for (const next of steps) {
    if (next.kind === "tick") now += next.gap;
    else if (next.kind === "switch") current[next.isolate % isolates] = rules[next.rules % rules.length]!;
    else if (next.kind === "forget") memories[next.isolate % isolates]!.consult(`other-${next.other}`, false, { need: 1, leases: false });
    else if (next.kind === "answer") {
      if (inFlight.length === 0) continue;
      const call = inFlight.splice(next.pick % inFlight.length, 1)[0]!;
      // A lost answer (the call timed out) never reaches the isolate; what the object decided stays counted.
      if (!next.lost) answer(call);
    } else {
      const isolate = next.isolate % isolates;
      const rulesNow = current[isolate]!;
      const demand = { need: 1, rulesKey: rulesNow.limit.key, leases: leasable(rulesNow.limit), quietLease: rulesNow.quiet };
      const consulted = memories[isolate]!.consult(ID, next.renewAhead && demand.leases, demand);
      if ("decision" in consulted) {
        if (consulted.decision.allowed) {
          admissions.push({ at: now, capacity: rulesNow.capacity, rules: rulesNow.limit.key!, by: "memory" });
          told.push({ remaining: consulted.decision.remaining, capacity: rulesNow.capacity });
        }
        const renewal = consulted.renewal;
        if (renewal) inFlight.push({ isolate, call: renewal, answer: decide(takeOf(ID, rulesNow, renewal, false)), rules: rulesNow, renewal: true });
        continue;
      }
      const decision = decide(takeOf(ID, rulesNow, consulted, true));
      if (decision.allowed) admissions.push({ at: now, capacity: rulesNow.capacity, rules: rulesNow.limit.key!, by: "object" });
      inFlight.push({ isolate, call: consulted, answer: decision, rules: rulesNow, renewal: false });
    }
  }
  for (const call of inFlight.splice(0)) answer(call);
  return { admissions, told };
}

const setup = fc.record({ isolates: fc.integer({ min: 1, max: 3 }), entries: fc.integer({ min: 1, max: 3 }) });

describe("quiet leases against the exact oracle", () => {
  it("no admission finds its window over its rules' capacity, small capacities with quiet leases forced", () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 50, maxLength: 600 }),
        fc.integer({ min: 20, max: 150 }),
        fc.integer({ min: 1, max: 60 }),
        setup,
        (steps, large, small, { isolates, entries }) => {
          const { admissions, told } = simulate(steps, rulesOf(large, Math.min(small, large), true), isolates, entries);
          expect(overAdmission(admissions, WINDOW_MS)).toBeUndefined();
          for (const { remaining, capacity } of told) expect(remaining).toBeLessThan(capacity);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("no admission finds its window over its rules' capacity, quiet leases at QUIET_LEASE_MIN_CAPACITY as limiter-client asks", () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 600, maxLength: 2_000 }),
        fc.integer({ min: QUIET_LEASE_MIN_CAPACITY, max: QUIET_LEASE_MIN_CAPACITY + 200 }),
        fc.integer({ min: 50, max: 400 }),
        setup,
        (steps, large, small, { isolates, entries }) => {
          const { admissions } = simulate(steps, rulesOf(large, small, false), isolates, entries);
          expect(overAdmission(admissions, WINDOW_MS)).toBeUndefined();
        },
      ),
      { numRuns: 40 },
    );
  });
});
