/**
 * Takes of several buckets of one store object carried in one call (src/limiter/calls-in-flight.ts), against the
 * exact sliding log bucket by bucket: the real CallsInFlight, IsolateBuckets and the object's row functions, takes
 * batched as limiter-client.ts `decideTake` does (decided at the later of now and every carried take's time, the
 * object's clock never running back), answers taken in by waiters in any order, carriers that vanish or fail (their
 * riders send their own again, alone when a call is out), takes sent alone while a call is out. Written by reviews
 * of the batching (helpers), kept as the batching's exactness property.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BucketRow, decideRow, emptyRow, resentTake, type TakeRequest } from "../../../src/limiter/bucket-row.ts";
import { CallsInFlight, type Ticket } from "../../../src/limiter/calls-in-flight.ts";
import { IsolateBuckets, type ObjectCall } from "../../../src/limiter/isolate-buckets.ts";
import type { LeaseDecision } from "../../../src/limiter/sliding-window.ts";
import { leasable } from "../../../src/limiter/window-rules.ts";
import { overAdmission, type Rules, takeOf, threeForms } from "../support/lease-trace.ts";

const STALE_MS = 1000;
const WINDOW_MS = 60_000;
/** Buckets of one store object: a call carries takes of any of them, as the gateway batches per object. */
const IDS = ["a", "b", "c"].map((letter) => letter.repeat(43));
const OBJECT = "shard";

type Step =
  | { readonly kind: "request"; readonly isolate: number; readonly bucket: number; readonly burst: number }
  | { readonly kind: "tick"; readonly gap: number }
  | { readonly kind: "decide"; readonly pick: number }
  | { readonly kind: "collect"; readonly pick: number }
  | { readonly kind: "answer"; readonly pick: number; readonly vanish: boolean; readonly fail: boolean }
  | { readonly kind: "poll"; readonly pick: number }
  | { readonly kind: "switch"; readonly isolate: number; readonly rules: number }
  | { readonly kind: "forget"; readonly isolate: number; readonly other: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({ kind: fc.constant("request" as const), isolate: fc.nat(1), bucket: fc.nat(IDS.length - 1), burst: fc.integer({ min: 1, max: 30 }) }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      gap: fc.oneof(
        fc.integer({ min: 0, max: 50 }),
        fc.constantFrom(899, 900, 999, 1_000, 1_001, 59_899, 59_900, 60_000),
        fc.integer({ min: 800, max: 70_000 }),
      ),
    }),
  },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("decide" as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("collect" as const), pick: fc.nat() }) },
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant("answer" as const), pick: fc.nat(), vanish: fc.nat(8).map((n) => n === 0), fail: fc.nat(8).map((n) => n === 0) }),
  },
  { weight: 12, arbitrary: fc.record({ kind: fc.constant("poll" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("switch" as const), isolate: fc.nat(1), rules: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("forget" as const), isolate: fc.nat(1), other: fc.nat(4) }) },
);

interface Waiter {
  readonly isolate: number;
  readonly id: string;
  readonly consulted: ObjectCall;
  readonly rules: Rules;
  readonly take: TakeRequest;
  ticket?: Ticket<TakeRequest, LeaseDecision>;
}
interface Call {
  readonly sender: Waiter;
  readonly call: number | undefined;
  readonly carried: Ticket<TakeRequest, LeaseDecision>[];
  callNow: number;
  answers?: LeaseDecision[];
  decidedAt?: number;
}

function simulate(steps: readonly Step[], rules: readonly Rules[]) {
  let now = 1_700_000_000_000;
  let latestNow = 0;
  const isolates = 2;
  const memories = Array.from({ length: isolates }, () => new IsolateBuckets({ now: () => now, maxBytes: 3 * 384 }));
  const inFlight = memories.map((memory) => new CallsInFlight<TakeRequest, LeaseDecision>(memory.now));
  const current = memories.map(() => rules[0]!);
  const rows = new Map<string, BucketRow>(IDS.map((id) => [id, emptyRow]));
  const admissions = new Map<string, { at: number; capacity: number }[]>(IDS.map((id) => [id, []]));
  let failOpen = 0;
  let failedCalls = 0;
  const waiting: Waiter[] = [];
  const wire: Call[] = [];
  let skew = 0;
  // An admission the object decided counts at the object's time (as the project's oracles count it); one the
  // isolate's memory gave (a leased admission, used when the answer said no) at the time it was given.
  const settle = (w: Waiter, answer: LeaseDecision, decidedAt: number) => {
    const decision = memories[w.isolate]!.settle(w.id, w.consulted, answer, 1);
    if (decision.allowed) admissions.get(w.id)!.push({ at: answer.allowed ? decidedAt : now, capacity: w.rules.capacity });
    if (answer.allowed) skew = Math.max(skew, now - decidedAt);
  };
  const send = (w: Waiter) => {
    const { call, carried } = inFlight[w.isolate]!.send(OBJECT, STALE_MS);
    const callNow = carried.reduce((latest, t) => Math.max(latest, t.sent), Math.max(w.consulted.sent, now));
    wire.push({ sender: w, call, carried, callNow });
  };
  const alone = (w: Waiter) => {
    wire.push({ sender: w, call: undefined, carried: [], callNow: Math.max(w.consulted.sent, now) });
  };
  const request = (isolate: number, id: string) => {
    const rulesNow = current[isolate]!;
    const demand = { need: 1, rulesKey: rulesNow.limit.key, leases: leasable(rulesNow.limit), quietLease: rulesNow.quiet };
    const consulted = memories[isolate]!.consult(id, false, demand);
    if ("decision" in consulted) {
      if (consulted.decision.allowed) admissions.get(id)!.push({ at: now, capacity: rulesNow.capacity });
      return;
    }
    const w: Waiter = { isolate, id, consulted, rules: rulesNow, take: takeOf(id, rulesNow, consulted, true) };
    const calls = inFlight[isolate]!;
    if (calls.isOut(OBJECT, STALE_MS) && calls.canWait(OBJECT, STALE_MS)) {
      w.ticket = calls.wait(OBJECT, w.take, consulted.sent);
      waiting.push(w);
    } else if (calls.isOut(OBJECT, STALE_MS)) alone(w);
    else send(w);
  };
  const poll = (index: number) => {
    const w = waiting[index]!;
    const calls = inFlight[w.isolate]!;
    if (!calls.settled(OBJECT, w.ticket!, STALE_MS)) return;
    waiting.splice(index, 1);
    const outcome = w.ticket!.outcome;
    if (outcome && "answer" in outcome) settle(w, outcome.answer, (outcome as { answer: LeaseDecision; at?: number }).at!);
    else {
      const again = w.ticket!.carriedAt !== undefined ? { ...w, take: resentTake(w.take) } : w;
      if (calls.isOut(OBJECT, STALE_MS)) alone(again);
      else send(again);
    }
  };
  const decide = (c: Call) => {
    latestNow = Math.max(latestNow, c.callNow);
    c.decidedAt = latestNow;
    c.answers = [c.sender.take, ...c.carried.map((t) => t.take)].map((take) => {
      const result = decideRow(rows.get(take.id)!, take, latestNow);
      rows.set(take.id, result.row);
      return result.decision;
    });
  };
  const answer = (index: number, vanish: boolean, fail: boolean) => {
    const c = wire.splice(index, 1)[0]!;
    if (vanish) return; // the sender's request went away: no outcome, no end
    if (!c.answers || fail) {
      for (const t of c.carried) t.outcome = { error: new Error("call failed") };
      failOpen += 1; // only the sender's own
      failedCalls += 1;
    } else {
      for (const [i, t] of c.carried.entries()) t.outcome = { answer: c.answers[i + 1]!, at: c.decidedAt } as { answer: LeaseDecision };
      settle(c.sender, c.answers[0]!, c.decidedAt!);
    }
    if (c.call !== undefined) inFlight[c.sender.isolate]!.end(OBJECT, c.call, c.carried);
  };
  for (const s of steps) {
    if (s.kind === "tick") now += s.gap;
    else if (s.kind === "switch") current[s.isolate]! = rules[s.rules % rules.length]!;
    else if (s.kind === "forget") memories[s.isolate]!.consult(`other-${s.other}`, false, { need: 1, leases: false });
    else if (s.kind === "request") for (let i = 0; i < s.burst; i++) request(s.isolate, IDS[s.bucket]!);
    else if (s.kind === "poll" && waiting.length > 0) poll(s.pick % waiting.length);
    else if (s.kind === "collect") {
      // The sender lets other work run before its call goes out, and takes the takes that came meanwhile along.
      const undecided = wire.filter((c) => !c.answers);
      const c = undecided[s.pick % Math.max(1, undecided.length)];
      if (c && c.call !== undefined) {
        inFlight[c.sender.isolate]!.collect(OBJECT, c.call, STALE_MS, c.carried);
        c.callNow = c.carried.reduce((latest, t) => Math.max(latest, t.sent), Math.max(c.callNow, now));
      }
    } else if (s.kind === "decide") {
      const undecided = wire.filter((c) => !c.answers);
      if (undecided.length > 0) decide(undecided[s.pick % undecided.length]!);
    } else if (s.kind === "answer" && wire.length > 0) answer(s.pick % wire.length, s.vanish, s.fail);
  }
  // Drain: every call decided and answered, every waiter polled until done (stale rules run on).
  for (let round = 0; round < 50 && (wire.length > 0 || waiting.length > 0); round++) {
    for (const c of wire) if (!c.answers) decide(c);
    while (wire.length > 0) answer(0, false, false);
    for (let i = waiting.length - 1; i >= 0; i--) poll(i);
    if (wire.length === 0 && waiting.length > 0) now += STALE_MS + 1;
  }
  for (const list of admissions.values()) list.sort((a, b) => a.at - b.at);
  return { admissions, failOpen, failedCalls, skew, left: waiting.length + wire.length };
}

describe("takes riding one call to their object, against the exact log", () => {
  it("takes of several buckets carried in one call, answers taken in late and in any order, never admit over capacity", () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 30, maxLength: 300 }),
        fc.integer({ min: 20, max: 400 }),
        fc.integer({ min: 5, max: 60 }),
        (steps, capacity, perSecond) => {
          const { admissions, left, failOpen, failedCalls } = simulate(steps, threeForms(capacity, perSecond, WINDOW_MS));
          expect(left).toBe(0);
          // Only a request's own call failing fails its take: riders of a carrier that failed or went away send their own.
          expect(failOpen).toBe(failedCalls);
          for (const list of admissions.values()) expect(overAdmission(list, WINDOW_MS)).toBeUndefined();
        },
      ),
      { numRuns: 3000 },
    );
  });
});
