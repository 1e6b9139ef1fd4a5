/**
 * What one rate-limit decision is asked: the windows a request must fit in (sliding or calendar) and its cost.
 * The seed's `{capacity, windowMs}` is one sliding window at cost 1.
 */

import type { CalendarPeriod, CalendarSpec } from "./calendar-period.ts";
import type { WindowSpec } from "./sliding-window.ts";

/** A sliding window (`windowMs`) or a calendar period (`period`). */
export type WindowRule = WindowSpec | CalendarSpec;

/** Most windows one rule (or one tier) may list. */
export const MAX_WINDOWS = 8;
/** Largest cost of one request; 0 checks without consuming. */
export const MAX_COST = 1_000_000;
/** Shortest and longest sliding window of a `windows` list: 1 s and 31 days. */
export const MIN_WINDOW_MS = 1_000;
export const MAX_WINDOW_MS = 31 * 24 * 3_600_000;

/**
 * Several windows and a cost, decided all or nothing. `key` names the rules (windows and capacities) so an
 * isolate notices when a bucket's rules changed (a tier switch) and drops what it remembered under the old
 * ones; absent, the rules are taken to never change.
 */
export interface LimitSpec {
  readonly windows: readonly WindowRule[];
  readonly cost: number;
  readonly key?: string;
  /** The cost comes from an expression: never leased, whatever this request's value (leases count cost-1 admissions). */
  readonly weighted?: boolean;
  /**
   * Admitted, the cost is a reservation of this id that the response may settle (src/limiter/settle.ts): never
   * leased, as a leased admission is counted nowhere a settle could find it.
   */
  readonly reserve?: string;
}

export function isCalendar(rule: WindowRule): rule is CalendarSpec {
  return "period" in rule;
}

/**
 * The name a window's count is stored under in a bucket row: its length or its period and offset, never its
 * capacity, so a tier with another capacity for the same window keeps the count.
 */
export function windowKey(rule: WindowRule): string {
  if (!isCalendar(rule)) return `s${rule.windowMs}`;
  return `${rule.period}${rule.offsetMinutes >= 0 ? "+" : ""}${rule.offsetMinutes}`;
}

/** The period and offset of a calendar window key (`month+0`, `day-300`), undefined for a sliding one. */
export function calendarOfKey(key: string): { period: CalendarPeriod; offsetMinutes: number } | undefined {
  const match = /^(hour|day|week|month)([+-]\d+)$/.exec(key);
  return match ? { period: match[1] as CalendarPeriod, offsetMinutes: Number(match[2]) } : undefined;
}

/** The windows and cost of either form. */
export function limitOf(spec: WindowSpec | LimitSpec): LimitSpec {
  return "windows" in spec ? spec : { windows: [spec], cost: 1 };
}

/**
 * Whether a limit may take leases (bucket-memory.ts): one sliding window of at least a minute at cost 1, the
 * seed's form, for which `take` proves them exact. Other forms are decided by the object request by request.
 */
export function leasable(limit: LimitSpec): boolean {
  const [only] = limit.windows;
  return (
    limit.windows.length === 1 &&
    only !== undefined &&
    !isCalendar(only) &&
    only.windowMs >= 60_000 &&
    limit.cost === 1 &&
    !limit.weighted &&
    limit.reserve === undefined
  );
}
