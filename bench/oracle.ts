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
