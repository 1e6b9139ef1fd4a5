/**
 * What the lease property tests (quiet-lease, review-restamp, calls-in-flight-exact) share: the rules a bucket may switch between, the take
 * limiter-client.ts sends for a call under them, the calls in flight, and the trace steps every such test draws.
 */

import fc from "fast-check";
import type { TakeRequest } from "../../../src/limiter/bucket-row.ts";
import type { ObjectCall } from "../../../src/limiter/isolate-buckets.ts";
import type { LeaseDecision } from "../../../src/limiter/sliding-window.ts";
import { leasable, type LimitSpec } from "../../../src/limiter/window-rules.ts";
import { upperBound } from "./sliding-log.ts";

/** One set of rules a bucket may be decided by: `quiet` says whether limiter-client.ts would ask for quiet leases. */
export interface Rules {
  readonly limit: LimitSpec;
  readonly capacity: number;
  readonly quiet: boolean;
}

/**
 * Quiet leases forced, busy leases only, and a form never leased, all of one capacity and one count of `windowMs`.
 * One capacity: with two, a lease granted under the smaller and used after the larger filled the window is "over"
 * the smaller by this oracle though it was counted when granted (a tier switch, not what these tests are about).
 */
export function threeForms(capacity: number, perSecond: number, windowMs: number): Rules[] {
  const sliding = { capacity, windowMs };
  return [
    { limit: { windows: [sliding], cost: 1, key: "quiet" }, capacity, quiet: true },
    { limit: { windows: [sliding], cost: 1, key: "busy" }, capacity, quiet: false },
    { limit: { windows: [sliding, { capacity: perSecond, windowMs: 1_000 }], cost: 1, key: "several" }, capacity, quiet: false },
  ];
}

/** The take limiter-client.ts sends for `call` on bucket `id` under `rules`. */
export function takeOf(id: string, rules: Rules, call: ObjectCall, forRequest: boolean): TakeRequest {
  const [first] = rules.limit.windows;
  if (leasable(rules.limit) && first && "windowMs" in first) {
    return { id, spec: first, want: call.want, leaseMs: call.leaseMs, returned: call.returned, forRequest };
  }
  return { id, windows: rules.limit.windows, cost: 1, want: 1, leaseMs: 0, returned: call.returned, forRequest: true };
}

/** A call sent to the object whose answer is not delivered yet. */
export interface InFlight {
  readonly isolate: number;
  readonly call: ObjectCall;
  readonly answer: LeaseDecision;
  readonly rules: Rules;
  readonly renewal: boolean;
}

/** Steps every lease trace draws besides its requests and ticks: an answer delivered (or lost), a rules switch, a forgotten bucket. */
export const answerStep = fc.record({ kind: fc.constant("answer" as const), pick: fc.nat(), lost: fc.nat(3).map((n) => n === 0) });
export const switchStep = (rules: number) => fc.record({ kind: fc.constant("switch" as const), isolate: fc.nat(2), rules: fc.nat(rules) });
export const forgetStep = fc.record({ kind: fc.constant("forget" as const), isolate: fc.nat(2), other: fc.nat(4) });

/** The first admission that found its window (itself and those before it, in time order) over the capacity that admitted it. */
export function overAdmission<A extends { readonly at: number; readonly capacity: number }>(
  admissions: readonly A[],
  windowMs: number,
): (A & { index: number; counted: number }) | undefined {
  const times = admissions.map((admission) => admission.at);
  for (let index = 0; index < admissions.length; index++) {
    const admission = admissions[index]!;
    const counted = index + 1 - upperBound(times, admission.at - windowMs);
    if (counted > admission.capacity) return { ...admission, index, counted };
  }
  return undefined;
}
