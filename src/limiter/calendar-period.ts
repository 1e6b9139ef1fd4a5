/**
 * Calendar quotas: a window that resets on calendar boundaries (hour, day, week, month) in UTC or at a fixed
 * offset from it, instead of sliding. Pure functions of the state and the time.
 *
 * Exact by construction: the state is the start of one period and the cost admitted in it; a request is
 * admitted only if the cost already admitted in the period it falls in, plus its own, is at most the capacity.
 * A period is a half-open interval [start, end), so every admission belongs to exactly one period.
 */

export const CALENDAR_PERIODS = ["hour", "day", "week", "month"] as const;
export type CalendarPeriod = (typeof CALENDAR_PERIODS)[number];

/** Offsets from UTC a period may be stated in, in minutes (UTC-14:00 … UTC+14:00, as time zones are). */
export const MAX_OFFSET_MINUTES = 14 * 60;

export interface CalendarSpec {
  readonly capacity: number;
  readonly period: CalendarPeriod;
  /** Local time = UTC + offset: `+02:00` is 120. */
  readonly offsetMinutes: number;
}

/** The cost admitted in the period starting at `start` (and ending at `end`). */
export interface CalendarState {
  readonly start: number;
  readonly end: number;
  readonly count: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** 1970-01-01 was a Thursday: days since the epoch plus this, modulo 7, count from Monday (ISO 8601 weeks). */
const MONDAY_SHIFT = 3;

/** The period [start, end) that `now` falls in. */
export function periodAt(now: number, period: CalendarPeriod, offsetMinutes: number): { start: number; end: number } {
  const offset = offsetMinutes * 60_000;
  const local = now + offset;
  if (period === "hour" || period === "day") {
    const length = period === "hour" ? HOUR_MS : DAY_MS;
    const start = Math.floor(local / length) * length;
    return { start: start - offset, end: start + length - offset };
  }
  if (period === "week") {
    const day = Math.floor(local / DAY_MS);
    const monday = day - ((((day + MONDAY_SHIFT) % 7) + 7) % 7);
    return { start: monday * DAY_MS - offset, end: (monday + 7) * DAY_MS - offset };
  }
  const date = new Date(local);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  return { start: Date.UTC(year, month, 1) - offset, end: Date.UTC(year, month + 1, 1) - offset };
}

/**
 * The cost counted at `now` in the state's period. A state from a later period than `now`'s (a clock that
 * stepped back) is counted as the current one: that can only refuse more, never admit more.
 */
function periodOf(state: CalendarState | undefined, now: number, spec: CalendarSpec): CalendarState {
  const { start, end } = periodAt(now, spec.period, spec.offsetMinutes);
  if (state && state.start >= start && state.count > 0) return state;
  return { start, end, count: 0 };
}

export interface CalendarCheck {
  readonly current: CalendarState;
  /** 0 when `need` fits now; else until the period ends (when the next one starts empty). */
  readonly waitMs: number;
}

export function checkPeriod(state: CalendarState | undefined, now: number, spec: CalendarSpec, need: number): CalendarCheck {
  const current = periodOf(state, now, spec);
  return { current, waitMs: current.count + need <= spec.capacity ? 0 : Math.max(1, current.end - now) };
}

export function recordInPeriod(current: CalendarState, cost: number): CalendarState {
  return { ...current, count: current.count + cost };
}

/** The `w` of the RateLimit-Policy field: the length of the period `now` falls in, in seconds (a month's varies). */
export function periodSeconds(now: number, spec: Omit<CalendarSpec, "capacity">): number {
  const { start, end } = periodAt(now, spec.period, spec.offsetMinutes);
  return Math.round((end - start) / 1000);
}
