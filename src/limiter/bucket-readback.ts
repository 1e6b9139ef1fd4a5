/**
 * Reading a bucket back without counting: for each window of the rules that decide it, the capacity, what is
 * counted, what remains and when more becomes available, computed from the stored row with the same pure
 * functions a take uses (`checkRoom`, `checkPeriod`), so a read and the next take agree on the same row.
 */

import { isSeedRow, windowsOf, type BucketRow } from "./bucket-row.ts";
import { checkPeriod } from "./calendar-period.ts";
import { isStoredCalendar, type StoredWindow } from "./several-windows.ts";
import { checkRoom, emptyWindow, refillAfter, resetAfter } from "./sliding-window.ts";
import { isCalendar, type WindowRule, windowKey } from "./window-rules.ts";

export interface WindowReading {
  readonly capacity: number;
  /** Cost counted in the window now (admissions leased to isolates included: they are counted when leased). */
  readonly used: number;
  readonly remaining: number;
  /** Milliseconds until a request of cost 1 would be admitted: 0 while `remaining` > 0. */
  readonly retryAfterMs: number;
  /** Milliseconds until the oldest counted cost leaves the window (a calendar period: until it ends); 0 when nothing is counted. */
  readonly refillMs: number;
  /** Milliseconds until everything counted now has left the window. */
  readonly resetMs: number;
}

/**
 * The row's windows by the keys `rules` read them under. One sliding window decided by another length reads the
 * row's single sliding window, as `decideRow` carries that count over.
 */
function storedFor(row: BucketRow, rules: readonly WindowRule[]): Map<string, StoredWindow> {
  const windows = windowsOf(row);
  const [only] = rules;
  if (rules.length === 1 && only !== undefined && !isCalendar(only) && isSeedRow(row) && windows.size === 1) {
    const [stored] = windows.values();
    const key = windowKey(only);
    return new Map([[key, { ...stored!, key, windowMs: only.windowMs }]]);
  }
  return windows;
}

/** Each rule's window of `row` at `now`, in the order of `rules`. */
export function readBucket(row: BucketRow, rules: readonly WindowRule[], now: number): WindowReading[] {
  const windows = storedFor(row, rules);
  return rules.map((rule) => {
    const stored = windows.get(windowKey(rule));
    if (isCalendar(rule)) {
      const previous = stored && isStoredCalendar(stored) ? stored.calendar : undefined;
      const { current, waitMs } = checkPeriod(previous, now, rule, 1);
      const untilEnd = current.count > 0 ? Math.max(0, current.end - now) : 0;
      const remaining = Math.max(0, rule.capacity - current.count);
      return { capacity: rule.capacity, used: current.count, remaining, retryAfterMs: waitMs, refillMs: untilEnd, resetMs: untilEnd };
    }
    const state = stored && !isStoredCalendar(stored) ? stored.state : emptyWindow;
    const { current, counted, waitMs } = checkRoom(state, now, rule, 1);
    return {
      capacity: rule.capacity,
      used: counted,
      remaining: Math.max(0, rule.capacity - counted),
      retryAfterMs: waitMs,
      refillMs: refillAfter(current, now, rule.windowMs),
      resetMs: resetAfter(current, now, rule),
    };
  });
}

/** One read-back as the object's `readAll` takes it: bucket `id` under the rules `windows`. */
export interface ReadRequest {
  readonly id: string;
  readonly windows: readonly WindowRule[];
}
