/** Test oracles for the sliding window: the exact sliding log, and counting over sorted timestamps. */

/** Index of the first element of the non-decreasing `times` that is >= `value`. */
export function lowerBound(times: readonly number[], value: number): number {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (times[mid] < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Index of the first element of the non-decreasing `times` that is > `value`. */
export function upperBound(times: readonly number[], value: number): number {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (times[mid] <= value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** How many of the non-decreasing `times` fall in (from, to]. */
export function countIn(times: readonly number[], from: number, to: number): number {
  return upperBound(times, to) - upperBound(times, from);
}

/**
 * The exact sliding log: admits a request at `now` iff fewer than `capacity` requests were admitted in
 * (now - windowMs, now]. It keeps every admission, which is what the real counter must not do.
 */
export class SlidingLog {
  readonly admitted: number[] = [];

  constructor(
    readonly capacity: number,
    readonly windowMs: number,
  ) {}

  hit(now: number): boolean {
    if (countIn(this.admitted, now - this.windowMs, now) >= this.capacity) return false;
    this.admitted.push(now);
    return true;
  }
}

/**
 * The largest number of `times` (non-decreasing) inside any window (t - windowMs, t]. The maximum is
 * reached by a window ending at one of the times, so checking each one's trailing window is exhaustive.
 */
export function maxInAnyWindow(times: readonly number[], windowMs: number): number {
  let max = 0;
  for (const t of times) max = Math.max(max, countIn(times, t - windowMs, t));
  return max;
}
