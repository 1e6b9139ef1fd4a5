/**
 * Several windows decided all or nothing, with a cost per request: pure functions of the windows' states and
 * the time.
 *
 * A request of cost `c` is admitted only if every window has room for max(c, 1) (a cost of 0 checks without
 * consuming); then `c` is recorded in every window, else in none. Each window is exact on its own (a sliding
 * window counts every admission for at least a full window after it, sliding-window.ts; a calendar window counts
 * the period's total, calendar-period.ts), and admitting in all or none cannot break any of them: a window only
 * ever records a cost it admitted.
 */

import { type CalendarState, checkPeriod, recordInPeriod } from "./calendar-period.ts";
import {
  checkRoom,
  emptyWindow,
  expiresAt,
  type LeaseDecision,
  recordAt,
  refillAfter,
  resetAfter,
  type WindowPart,
  type WindowState,
} from "./sliding-window.ts";
import { isCalendar, windowKey, type WindowRule } from "./window-rules.ts";

/** The count of one window as a bucket keeps it, under `windowKey` of its rule. */
export type StoredWindow = StoredSliding | StoredCalendar;
export interface StoredSliding {
  readonly key: string;
  readonly windowMs: number;
  readonly state: WindowState;
}
export interface StoredCalendar {
  readonly key: string;
  readonly calendar: CalendarState;
}

export function isStoredCalendar(stored: StoredWindow): stored is StoredCalendar {
  return "calendar" in stored;
}

/** When every admission of the window has stopped counting (undefined: it counts nothing). */
export function storedExpiry(stored: StoredWindow): number | undefined {
  if (isStoredCalendar(stored)) return stored.calendar.count > 0 ? stored.calendar.end : undefined;
  return expiresAt(stored.state, stored.windowMs);
}

interface Checked {
  readonly rule: WindowRule;
  readonly waitMs: number;
  readonly counted: number;
  /** The window as of `now` with `cost` recorded, for when every window admits. */
  readonly admit: (cost: number) => StoredWindow;
  /** The window as of `now`, unchanged. */
  readonly kept: StoredWindow;
  readonly resetMs: (stored: StoredWindow) => number;
  readonly refillMs: (stored: StoredWindow) => number;
}

function check(stored: StoredWindow | undefined, rule: WindowRule, now: number, need: number): Checked {
  const key = windowKey(rule);
  if (isCalendar(rule)) {
    const previous = stored && isStoredCalendar(stored) ? stored.calendar : undefined;
    const { current, waitMs } = checkPeriod(previous, now, rule, need);
    const untilEnd = (s: StoredWindow) => (isStoredCalendar(s) && s.calendar.count > 0 ? Math.max(0, s.calendar.end - now) : 0);
    return {
      rule,
      waitMs,
      counted: current.count,
      admit: (cost) => ({ key, calendar: recordInPeriod(current, cost) }),
      kept: { key, calendar: current },
      resetMs: untilEnd,
      refillMs: untilEnd,
    };
  }
  const state = stored && !isStoredCalendar(stored) ? stored.state : emptyWindow;
  const { current, counted, waitMs } = checkRoom(state, now, rule, need);
  const subWindowsOf = (s: StoredWindow) => (isStoredCalendar(s) ? [] : s.state.subWindows);
  return {
    rule,
    waitMs,
    counted,
    admit: (cost) => ({ key, windowMs: rule.windowMs, state: recordAt(current, now, cost, rule.windowMs) }),
    kept: { key, windowMs: rule.windowMs, state: { subWindows: current } },
    resetMs: (s) => resetAfter(subWindowsOf(s), now, rule),
    refillMs: (s) => refillAfter(subWindowsOf(s), now, rule.windowMs),
  };
}

/**
 * Decides one request of `cost` at `now` against `rules`, whose counts `windows` holds by `windowKey` (a
 * missing one counts nothing). Returns the decision (`windows`: each rule's part, in order; `remaining` and
 * `refillMs` those of the window closest to its limit; `retryAfterMs` the time until every window admits the
 * cost) and each rule's window as it is now. No leases: `granted` is 1 for an admitted request.
 */
export function decideWindows(
  windows: ReadonlyMap<string, StoredWindow>,
  now: number,
  rules: readonly WindowRule[],
  cost: number,
): { decision: LeaseDecision; windows: StoredWindow[] } {
  const need = Math.max(1, cost);
  const checked = rules.map((rule) => check(windows.get(windowKey(rule)), rule, now, need));
  const allowed = checked.every((window) => window.waitMs === 0);
  const after = checked.map((window) => (allowed ? window.admit(cost) : window.kept));
  const parts: WindowPart[] = checked.map((window, i) => {
    const remaining = Math.max(0, window.rule.capacity - window.counted - (allowed ? cost : 0));
    return { remaining, refillMs: allowed ? window.refillMs(after[i]!) : window.waitMs, waitMs: window.waitMs };
  });
  const closest = closestToLimit(parts);
  const retryAfterMs = allowed ? 0 : Math.max(...parts.map((part) => part.waitMs));
  return {
    decision: {
      allowed,
      granted: allowed ? 1 : 0,
      leaseStart: 0,
      remaining: allowed ? (parts[closest]?.remaining ?? 0) : 0,
      retryAfterMs,
      resetMs: Math.max(0, ...checked.map((window, i) => window.resetMs(after[i]!))),
      refillMs: allowed ? (parts[closest]?.refillMs ?? 0) : retryAfterMs,
      windows: parts,
    },
    windows: after,
  };
}

/**
 * The index of the window the RateLimit field reports: on a refusal the one that waits longest (its wait is
 * the retry-after); else the one closest to its limit, the fewest remaining, and of those the one that refills last.
 */
export function closestToLimit(parts: readonly WindowPart[]): number {
  let best = 0;
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!;
    const current = parts[best]!;
    if (part.waitMs !== current.waitMs) {
      if (part.waitMs > current.waitMs) best = i;
    } else if (part.remaining < current.remaining || (part.remaining === current.remaining && part.refillMs > current.refillMs)) best = i;
  }
  return best;
}
