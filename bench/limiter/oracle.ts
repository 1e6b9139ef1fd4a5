/**
 * The exact sliding-log oracle and the over-admission checks the accuracy figures are made of.
 * Pure: times are plain milliseconds. A window is (t - windowMs, t]; a bucket may admit at most
 * `capacity` requests in any window.
 */

/** Which of the requests (at these times, in this order) an exact sliding log admits. */
export function slidingLogDecisions(times: readonly number[], capacity: number, windowMs: number): boolean[] {
  const log: number[] = [];
  let head = 0;
  return times.map((time) => {
    while (head < log.length && log[head]! <= time - windowMs) head++;
    if (log.length - head >= capacity) return false;
    log.push(time);
    return true;
  });
}

/**
 * Admissions at known times (sorted, in decision order) that found `capacity` earlier admissions
 * inside their window: each one is an over-admission.
 */
export function overAdmittedAtPoints(admittedTimes: readonly number[], capacity: number, windowMs: number): number {
  let over = 0;
  let head = 0;
  for (let k = 0; k < admittedTimes.length; k++) {
    const time = admittedTimes[k]!;
    while (admittedTimes[head]! <= time - windowMs) head++;
    if (k - head >= capacity) over++;
  }
  return over;
}

/** An admission seen from the client: it happened at some instant in [sent, answered]. */
export interface ObservedAdmission {
  readonly sent: number;
  readonly answered: number;
}

/**
 * Admissions that are certainly over-admissions whatever the exact instants inside their
 * [sent, answered] intervals: `capacity` other admissions were certainly earlier (answered before
 * this one was sent) and certainly inside its window (sent less than `windowMs` before it was answered).
 */
export function overAdmittedObserved(admissions: readonly ObservedAdmission[], capacity: number, windowMs: number): number {
  let over = 0;
  for (const k of admissions) {
    let earlierInWindow = 0;
    for (const j of admissions) {
      if (j !== k && j.answered < k.sent && j.sent > k.answered - windowMs) earlierInWindow++;
    }
    if (earlierInWindow >= capacity) over++;
  }
  return over;
}

/**
 * The most admissions that certainly fell inside one window: intervals that all lie within
 * [first.sent, first.sent + windowMs).
 */
export function busiestObservedWindow(admissions: readonly ObservedAdmission[], windowMs: number): number {
  let busiest = 0;
  for (const first of admissions) {
    let inside = 0;
    for (const other of admissions) {
      if (other.sent >= first.sent && other.answered < first.sent + windowMs) inside++;
    }
    busiest = Math.max(busiest, inside);
  }
  return busiest;
}

/** A window of the weighted oracle: at most `capacity` of cost in any (t - windowMs, t]. */
export interface WeightedWindow {
  readonly capacity: number;
  readonly windowMs: number;
}

/**
 * A request of the weighted oracle: its estimated cost (`cost`, reserved when admitted) and what its response
 * settles (`settled`, undefined when it settles nothing and the estimate stays), applied at `settledAt`.
 */
export interface WeightedRequest {
  readonly at: number;
  readonly cost: number;
  readonly settled?: number;
  readonly settledAt: number;
}

/** What an admitted entry counts at `time`: the estimate until its settle lands, then the settled cost. */
function countedAt(entry: WeightedRequest, time: number): number {
  return entry.settled !== undefined && entry.settledAt <= time ? entry.settled : entry.cost;
}

/**
 * What an exact weighted log with several windows decides for each request (sorted by `at`): undefined when it
 * admits it, else the indexes of the windows without room. A request is admitted only if its whole cost fits in
 * every window, all or nothing (a cost of 0 needs room for 1, and counts nothing), and a settle replaces its
 * entry's cost in place from `settledAt` on.
 */
export function weightedLogRefusals(requests: readonly WeightedRequest[], windows: readonly WeightedWindow[]): (number[] | undefined)[] {
  const longest = Math.max(...windows.map((window) => window.windowMs));
  const log: WeightedRequest[] = [];
  let head = 0;
  return requests.map((request) => {
    while (head < log.length && log[head]!.at <= request.at - longest) head++;
    const need = Math.max(1, request.cost);
    const full = windows.flatMap((window, index) => {
      let held = 0;
      for (let at = head; at < log.length; at++) {
        const entry = log[at]!;
        if (entry.at > request.at - window.windowMs) held += countedAt(entry, request.at);
      }
      return held + need > window.capacity ? [index] : [];
    });
    if (full.length > 0) return full;
    log.push(request);
    return undefined;
  });
}

/** Which requests the exact weighted log admits (see weightedLogRefusals). */
export function weightedLogDecisions(requests: readonly WeightedRequest[], windows: readonly WeightedWindow[]): boolean[] {
  return weightedLogRefusals(requests, windows).map((refused) => refused === undefined);
}

/** A weighted admission seen from the client: it happened at some instant in [sent, answered]. */
export interface ObservedWeightedAdmission extends ObservedAdmission {
  readonly cost: number;
  /** What its response settles (undefined: nothing, the estimate stays). */
  readonly settled?: number;
}

/**
 * Admissions that certainly took a window past its capacity, whatever the exact instants inside the [sent, answered]
 * intervals and whenever the settles landed: the admissions certainly earlier and certainly inside its window
 * count at least their estimate or their settled cost, whichever is less (a refund may have landed, a charge may
 * not have yet), and with its own cost (1 for a cost of 0) they exceed that window's capacity. Counted once per
 * admission, whichever window it broke.
 */
export function overAdmittedWeighted(admissions: readonly ObservedWeightedAdmission[], windows: readonly WeightedWindow[]): number {
  const least = (admission: ObservedWeightedAdmission) => (admission.settled === undefined ? admission.cost : Math.min(admission.cost, admission.settled));
  let over = 0;
  for (const k of admissions) {
    const broke = windows.some((window) => {
      let certain = 0;
      for (const j of admissions) {
        if (j !== k && j.answered < k.sent && j.sent > k.answered - window.windowMs) certain += least(j);
      }
      return certain + Math.max(1, k.cost) > window.capacity;
    });
    if (broke) over++;
  }
  return over;
}
