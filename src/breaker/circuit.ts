/**
 * The circuit breaker as pure functions over plain state, with the clock passed in: the one window and state
 * machine behind both ways to configure a breaker (a route's circuit_breaker module, the circuit-breaker action).
 *
 * Closed: requests pass and their outcomes fill a rolling window of `numBuckets` buckets. When the
 * window holds at least `volumeThreshold` outcomes and the error share reaches
 * `errorThresholdPercentage`, the circuit opens. Open: requests are rejected until `trippedMs` has
 * passed; then exactly one probe is let through (half-open). The probe's success closes the circuit,
 * its failure opens it again. A probe that never reports back is replaced after `trippedMs`.
 */

export interface BreakerSpec {
  readonly trippedMs: number;
  readonly rollingWindowMs: number;
  readonly numBuckets: number;
  readonly volumeThreshold: number;
  /** 0 … 1 */
  readonly errorThresholdPercentage: number;
}

export interface OutcomeBucket {
  readonly start: number;
  readonly requests: number;
  readonly errors: number;
}

export type BreakerStatus = "closed" | "open" | "half_open";

export interface BreakerState {
  readonly status: BreakerStatus;
  readonly buckets: readonly OutcomeBucket[];
  /** When the circuit last opened (open and half-open). */
  readonly openedAt: number;
  /** When the current probe was let through (half-open), else 0. */
  readonly probeSince: number;
}

export const closedCircuit: BreakerState = { status: "closed", buckets: [], openedAt: 0, probeSince: 0 };

export interface Admission {
  readonly allowed: boolean;
  /** This request is the half-open probe: its outcome decides the circuit. */
  readonly probe: boolean;
  /** While rejected: milliseconds until a probe may pass. */
  readonly retryAfterMs: number;
}

export interface BreakerView {
  readonly status: BreakerStatus;
  readonly requests: number;
  readonly errors: number;
  /** Open: when a probe may pass (epoch ms), else 0. */
  readonly openUntil: number;
}

function bucketLength(spec: BreakerSpec): number {
  return Math.max(1, Math.floor(spec.rollingWindowMs / spec.numBuckets));
}

function inWindow(buckets: readonly OutcomeBucket[], now: number, spec: BreakerSpec): OutcomeBucket[] {
  const length = bucketLength(spec);
  return buckets.filter((bucket) => bucket.start + length * spec.numBuckets > now);
}

function totals(buckets: readonly OutcomeBucket[]): { requests: number; errors: number } {
  let requests = 0;
  let errors = 0;
  for (const bucket of buckets) {
    requests += bucket.requests;
    errors += bucket.errors;
  }
  return { requests, errors };
}

export function view(state: BreakerState, now: number, spec: BreakerSpec): BreakerView {
  const { requests, errors } = totals(inWindow(state.buckets, now, spec));
  return { status: state.status, requests, errors, openUntil: state.status === "closed" ? 0 : state.openedAt + spec.trippedMs };
}

/** Decides whether a request may reach the upstream now. */
export function admit(state: BreakerState, now: number, spec: BreakerSpec): { admission: Admission; state: BreakerState } {
  if (state.status === "closed") return { admission: { allowed: true, probe: false, retryAfterMs: 0 }, state };
  const probeDue = state.status === "open" ? state.openedAt + spec.trippedMs : state.probeSince + spec.trippedMs;
  if (now >= probeDue) {
    return {
      admission: { allowed: true, probe: true, retryAfterMs: 0 },
      state: { ...state, status: "half_open", probeSince: now },
    };
  }
  return { admission: { allowed: false, probe: false, retryAfterMs: probeDue - now }, state };
}

/** Records the outcome of a request that `admit` let through. */
export function record(state: BreakerState, now: number, spec: BreakerSpec, outcome: { error: boolean; probe: boolean }): BreakerState {
  if (outcome.probe) {
    if (state.status !== "half_open") return state;
    return outcome.error ? { status: "open", buckets: [], openedAt: now, probeSince: 0 } : closedCircuit;
  }
  if (state.status !== "closed") return state; // a late outcome from before the circuit opened
  const length = bucketLength(spec);
  const start = now - (now % length);
  const buckets = inWindow(state.buckets, now, spec);
  const last = buckets[buckets.length - 1];
  const error = outcome.error ? 1 : 0;
  const next =
    last && last.start === start
      ? [...buckets.slice(0, -1), { start, requests: last.requests + 1, errors: last.errors + error }]
      : [...buckets, { start, requests: 1, errors: error }];
  const { requests, errors } = totals(next);
  if (requests >= spec.volumeThreshold && requests > 0 && errors / requests >= spec.errorThresholdPercentage) {
    return { status: "open", buckets: [], openedAt: now, probeSince: 0 };
  }
  return { ...state, buckets: next };
}

/** An upstream answer that counts as an error: status ≥ 500 (an unreachable origin and a timeout arrive as 502 and 504). */
export function isUpstreamError(status: number): boolean {
  return status >= 500;
}
