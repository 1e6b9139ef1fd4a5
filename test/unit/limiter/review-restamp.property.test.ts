/**
 * Used leased admissions moved back from their lease's end (`LeaseReturn.used`) against the exact oracle: several
 * isolates' real bucket memories (quiet 60 s leases forced at small capacities, busy 1 s leases, renewals ahead,
 * answers late, lost or past their deadline, rules switches, forgotten buckets, refunds forgetting "limited") in
 * front of one object's real row functions, on one clock. Every admission is checked against the sliding log,
 * and after every decision the row's 60 s sub-windows keep the order `record` promises.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BucketRow, decideRow, emptyRow, type TakeRequest, windowsOf } from "../../../src/limiter/bucket-row.ts";
import { IsolateBuckets } from "../../../src/limiter/isolate-buckets.ts";
import { isStoredCalendar } from "../../../src/limiter/several-windows.ts";
import { type LeaseDecision, subWindowLength } from "../../../src/limiter/sliding-window.ts";
import { leasable } from "../../../src/limiter/window-rules.ts";
import { answerStep, forgetStep, type InFlight, overAdmission, type Rules, switchStep, takeOf, threeForms } from "../support/lease-trace.ts";

const WINDOW_MS = 60_000;
const ID = "r".repeat(43);

type Step =
  | { readonly kind: "request"; readonly isolate: number; readonly renewAhead: boolean; readonly burst: number; readonly prompt: boolean }
  | { readonly kind: "tick"; readonly gap: number }
  | { readonly kind: "answer"; readonly pick: number; readonly lost: boolean }
  | { readonly kind: "switch"; readonly isolate: number; readonly rules: number }
  | { readonly kind: "forget"; readonly isolate: number; readonly other: number }
  | { readonly kind: "refund"; readonly isolate: number };

/** Gaps near the edges that matter: a lease's deadline (1 s, 60 s less the margin), the window, the 100 ms margin. */
const gap = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 120 }) },
  { weight: 3, arbitrary: fc.integer({ min: 800, max: 4_000 }) },
  { weight: 2, arbitrary: fc.constantFrom(899, 900, 901, 999, 1_000, 59_800, 59_899, 59_900, 59_901, 60_000, 60_100) },
  { weight: 1, arbitrary: fc.integer({ min: 8_000, max: 70_000 }) },
);

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant("request" as const),
      isolate: fc.nat(2),
      renewAhead: fc.boolean(),
      prompt: fc.boolean(),
      burst: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 40 })),
    }),
  },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("tick" as const), gap }) },
  { weight: 10, arbitrary: answerStep },
  { weight: 1, arbitrary: switchStep(2) },
  { weight: 1, arbitrary: forgetStep },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("refund" as const), isolate: fc.nat(2) }) },
);

interface Admission {
  readonly at: number;
  readonly capacity: number;
}

/** Why the 60 s sub-windows of `row` break `record`'s order (undefined: they keep it). */
function disorder(row: BucketRow): string | undefined {
  const stored = windowsOf(row).get(`s${WINDOW_MS}`);
  if (!stored || isStoredCalendar(stored)) return undefined;
  const length = subWindowLength(WINDOW_MS);
  const subs = stored.state.subWindows;
  for (let i = 0; i < subs.length; i++) {
    const sub = subs[i]!;
    if (sub.start % length !== 0 || sub.end < sub.start || sub.end > sub.start + length || sub.count <= 0) return `sub-window ${i}: ${JSON.stringify(sub)}`;
    const before = subs[i - 1];
    if (before && (sub.start < before.start + length || sub.end < before.end)) return `sub-windows ${i - 1}, ${i}: ${JSON.stringify([before, sub])}`;
  }
  return undefined;
}

function simulate(steps: readonly Step[], rules: readonly Rules[], isolates: number) {
  let now = 1_700_000_000_000;
  const memories = Array.from({ length: isolates }, () => new IsolateBuckets({ now: () => now, maxBytes: 2 * 256 }));
  const current = memories.map(() => rules[0]!);
  let row: BucketRow = emptyRow;
  const inFlight: InFlight[] = [];
  const admissions: Admission[] = [];
  const problems: string[] = [];
  const decide = (take: TakeRequest): LeaseDecision => {
    const result = decideRow(row, take, now);
    row = result.row;
    const problem = disorder(row);
    if (problem) problems.push(`at ${now}: ${problem}`);
    return result.decision;
  };
  const answer = ({ isolate, call, answer: decision, rules: decidedBy, renewal }: InFlight) => {
    const memory = memories[isolate]!;
    if (renewal) return memory.settleRenewal(ID, { ...call, rulesKey: decidedBy.limit.key }, decision);
    const settled = memory.settle(ID, { ...call, rulesKey: decidedBy.limit.key }, decision);
    if (settled.allowed && !decision.allowed) admissions.push({ at: now, capacity: decidedBy.capacity });
  };
  const request = (isolate: number, renewAhead: boolean, prompt: boolean) => {
    const rulesNow = current[isolate]!;
    const demand = { need: 1, rulesKey: rulesNow.limit.key, leases: leasable(rulesNow.limit), quietLease: rulesNow.quiet };
    const consulted = memories[isolate]!.consult(ID, renewAhead && demand.leases, demand);
    if ("decision" in consulted) {
      if (consulted.decision.allowed) admissions.push({ at: now, capacity: rulesNow.capacity });
      const renewal = consulted.renewal;
      if (renewal) inFlight.push({ isolate, call: renewal, answer: decide(takeOf(ID, rulesNow, renewal, false)), rules: rulesNow, renewal: true });
      return;
    }
    const decision = decide(takeOf(ID, rulesNow, consulted, true));
    if (decision.allowed) admissions.push({ at: now, capacity: rulesNow.capacity });
    const call = { isolate, call: consulted, answer: decision, rules: rulesNow, renewal: false };
    // Answered at once (the usual case), or left in flight for an "answer" step to deliver late, out of order or never.
    if (prompt) answer(call);
    else inFlight.push(call);
  };
  for (const next of steps) {
    if (next.kind === "tick") now += next.gap;
    else if (next.kind === "switch") current[next.isolate % isolates] = rules[next.rules % rules.length]!;
    else if (next.kind === "forget") memories[next.isolate % isolates]!.consult(`other-${next.other}`, false, { need: 1, leases: false });
    // A refund settled elsewhere (limiter-client.ts): the isolate only stops answering "limited" from memory.
    else if (next.kind === "refund") memories[next.isolate % isolates]!.forgetLimited(ID);
    else if (next.kind === "answer") {
      if (inFlight.length === 0) continue;
      const call = inFlight.splice(next.pick % inFlight.length, 1)[0]!;
      if (!next.lost) answer(call);
    } else for (let i = 0; i < next.burst; i++) request(next.isolate % isolates, next.renewAhead, next.prompt);
  }
  for (const call of inFlight.splice(0)) answer(call);
  return { admissions, problems };
}

describe("used leased admissions moved back from their lease's end, against the exact oracle", () => {
  it("no admission finds its window over capacity, and the sub-windows stay in order", () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 30, maxLength: 300 }),
        fc.integer({ min: 50, max: 600 }),
        fc.integer({ min: 10, max: 60 }),
        fc.integer({ min: 1, max: 3 }),
        (steps, capacity, perSecond, isolates) => {
          const { admissions, problems } = simulate(steps, threeForms(capacity, perSecond, WINDOW_MS), isolates);
          expect(problems).toEqual([]);
          expect(overAdmission(admissions, WINDOW_MS)).toBeUndefined();
        },
      ),
      { numRuns: 150 },
    );
  });
});
