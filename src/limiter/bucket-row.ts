/**
 * A bucket's row: the seed's form (one sliding window: its length and sub-windows) or several windows by key
 * (several-windows.ts), how one take changes it, and its text in the object's table. A bucket holding one
 * sliding window is written in the seed's form, so rows written before several windows existed read as they did.
 * A row may also keep reservations whose cost the response settles later (settle.ts); it is then in the windows form.
 */

import { CALENDAR_PERIODS, type CalendarState, MAX_OFFSET_MINUTES } from "./calendar-period.ts";
import { decideWindows, isStoredCalendar, type StoredWindow, storedExpiry } from "./several-windows.ts";
import { openReservations, RESERVATION_ID, type Reservation, reservationExpiry, settleReservation } from "./settle.ts";
import { emptyWindow, expiresAt, type LeaseDecision, type LeaseReturn, MAX_LEASE_MS, take, type WindowSpec, type WindowState } from "./sliding-window.ts";
import { calendarOfKey, isCalendar, MAX_COST, MAX_WINDOW_MS, MAX_WINDOWS, type WindowRule, windowKey } from "./window-rules.ts";

/** What the table keeps of a bucket: one sliding window (the seed's row), or several windows by key. */
export type BucketRow = SeedRow | WindowsRow;
export interface SeedRow {
  readonly windowMs: number;
  readonly state: WindowState;
}
export interface WindowsRow {
  readonly windows: readonly StoredWindow[];
  /** Admitted requests whose response may still settle their cost, oldest first. */
  readonly reservations?: readonly Reservation[];
}

/** Windows a row keeps: those of the rules deciding it, and others still counting (another tier's), up to this many. */
export const MAX_ROW_WINDOWS = 2 * MAX_WINDOWS;

/** One request's (or one lease's) take, as an isolate sends it: see `take` in sliding-window.ts. */
export interface TakeRequest {
  readonly id: string;
  /** The window, when `windows` is absent (the seed's form). */
  readonly spec?: WindowSpec;
  readonly want: number;
  readonly leaseMs: number;
  readonly returned?: LeaseReturn;
  readonly forRequest: boolean;
  /** Several windows, decided all or nothing (no leases); `spec` is then ignored. */
  readonly windows?: readonly WindowRule[];
  /** The request's cost, 0 … MAX_COST; default 1. */
  readonly cost?: number;
  /** Admitted, the cost is a reservation with this id, which one later settle may replace (settle.ts). */
  readonly reserve?: string;
}

/** A reservation's settle, as an isolate sends it after the response: bucket `id`, reservation, settled cost. */
export interface SettleRequest {
  readonly id: string;
  readonly reservation: string;
  readonly cost: number;
}

/**
 * `take` to be sent again after the call that carried it went stale or failed (its request went away): without
 * its lease hand-back, which that call may already have applied, and asking for no lease. A hand-back applied
 * twice takes out admissions that are not the lease's (other requests' in the same sub-window): an
 * over-admission. A lease granted to that call is counted but reaches nobody, so asking again would hold twice
 * the room. Losing the hand-back only counts more.
 */
export function resentTake(take: TakeRequest): TakeRequest {
  const { returned: _appliedOnce, ...again } = take;
  return again.want > 1 ? { ...again, want: 1 } : again;
}

export const emptyRow: BucketRow = { windowMs: 0, state: emptyWindow };

export function isSeedRow(row: BucketRow): row is SeedRow {
  return "state" in row;
}

function reservationsOf(row: BucketRow): readonly Reservation[] {
  return isSeedRow(row) ? [] : (row.reservations ?? []);
}

/** `row` keeping `reservations` (open at `now`): in the windows form when there are any, else as it is. */
function withReservations(row: BucketRow, reservations: readonly Reservation[], now: number): BucketRow {
  const open = openReservations(reservations, now);
  if (open.length === 0) return isSeedRow(row) || row.reservations === undefined ? row : rowOf(row.windows, new Map(), now);
  const windows = isSeedRow(row) ? [...windowsOf(row).values()] : row.windows;
  return { windows, reservations: open };
}

/** The windows of a row by key. */
export function windowsOf(row: BucketRow): Map<string, StoredWindow> {
  if (!isSeedRow(row)) return new Map(row.windows.map((stored) => [stored.key, stored]));
  if (row.state.subWindows.length === 0) return new Map();
  const key = windowKey({ capacity: 0, windowMs: row.windowMs });
  return new Map([[key, { key, windowMs: row.windowMs, state: row.state }]]);
}

/** The row of `windows` at `now`: those of `decided` first, then others while they still count. */
function rowOf(decided: readonly StoredWindow[], others: ReadonlyMap<string, StoredWindow>, now: number): BucketRow {
  const kept = [...decided];
  for (const stored of others.values()) {
    const expires = storedExpiry(stored);
    if (kept.length < MAX_ROW_WINDOWS && expires !== undefined && expires > now && !kept.some((k) => k.key === stored.key)) kept.push(stored);
  }
  const counting = kept.filter((stored) => storedExpiry(stored) !== undefined);
  const [only] = counting;
  if (counting.length === 1 && only && !isStoredCalendar(only)) return { windowMs: only.windowMs, state: only.state };
  if (counting.length === 0) return { windowMs: decided.length === 1 && !isStoredCalendar(decided[0]!) ? decided[0]!.windowMs : 0, state: emptyWindow };
  return { windows: counting };
}

/**
 * Decides one take against a row. The seed's form (one sliding window at cost 1) goes through `take`, leases
 * included; a row of one sliding window decided by one sliding window of another length keeps its count, as the
 * seed did when a policy's rate changed. Anything else goes through `decideWindows`, which never leases.
 * `changed`: whether the row must be written.
 */
export function decideRow(row: BucketRow, request: TakeRequest, now: number): { decision: LeaseDecision; row: BucketRow; changed: boolean } {
  const decided = decideWindowsOfRow(row, request, now);
  const reservations = reservationsOf(row);
  if (request.reserve === undefined && reservations.length === 0) return decided;
  const rules = request.windows ?? (request.spec ? [request.spec] : []);
  const reserved =
    request.reserve !== undefined && decided.decision.allowed
      ? [...reservations, { id: request.reserve, at: now, cost: request.cost ?? 1, keys: rules.map(windowKey) }]
      : reservations;
  const changed = decided.changed || reserved !== reservations;
  return { ...decided, row: withReservations(decided.row, reserved, now), changed };
}

/**
 * Settles one reservation of the row at `now` (settle.ts); `applied` false, and the row unchanged, when it has no
 * open reservation of that id (settled already, expired, or never made).
 */
export function settleRow(row: BucketRow, request: SettleRequest, now: number): { row: BucketRow; applied: boolean } {
  const reservations = reservationsOf(row);
  if (!reservations.some((reservation) => reservation.id === request.reservation)) return { row, applied: false };
  const settled = settleReservation(windowsOf(row), reservations, request.reservation, request.cost, now);
  if (!settled.applied) return { row, applied: false };
  return { row: withReservations(rowOf([], settled.windows, now), settled.reservations, now), applied: true };
}

function decideWindowsOfRow(row: BucketRow, request: TakeRequest, now: number): { decision: LeaseDecision; row: BucketRow; changed: boolean } {
  const rules = request.windows ?? (request.spec ? [request.spec] : []);
  const cost = request.cost ?? 1;
  const [first] = rules;
  const oneSliding = rules.length === 1 && first !== undefined && !isCalendar(first) ? first : undefined;
  if (oneSliding && cost === 1 && isSeedRow(row)) {
    const { decision, state } = take(row.state, now, oneSliding, request.want, request.leaseMs, request.returned, request.forRequest);
    const changed = decision.granted > 0 || handsBack(request.returned);
    return { decision, row: { windowMs: oneSliding.windowMs, state }, changed };
  }
  const windows = windowsOf(row);
  if (oneSliding && isSeedRow(row) && windows.size === 1) {
    // One sliding window decided by another length: the count carries over, as in the seed.
    const [stored] = windows.values();
    windows.clear();
    const key = windowKey(oneSliding);
    windows.set(key, { ...stored!, key, windowMs: oneSliding.windowMs });
  }
  if (oneSliding && cost === 1) {
    const key = windowKey(oneSliding);
    const stored = windows.get(key);
    const before = stored && !isStoredCalendar(stored) ? stored.state : emptyWindow;
    const { decision, state } = take(before, now, oneSliding, request.want, request.leaseMs, request.returned, request.forRequest);
    const changed = decision.granted > 0 || handsBack(request.returned);
    return { decision, row: rowOf([{ key, windowMs: oneSliding.windowMs, state }], windows, now), changed };
  }
  const { decision, windows: decided } = decideWindows(windows, now, rules, cost);
  return { decision, row: rowOf(decided, windows, now), changed: decision.allowed && cost > 0 };
}

/** Whether a take's hand-back may change the row (so it must be written even when the take admits nothing). */
function handsBack(returned: LeaseReturn | undefined): boolean {
  return returned !== undefined && ((returned.count ?? 0) > 0 || (returned.used ?? 0) > 0);
}

/** When every admission in the row has stopped counting: the time its storage may be dropped. */
export function rowExpiry(row: BucketRow): number | undefined {
  if (isSeedRow(row)) return expiresAt(row.state, row.windowMs);
  let latest: number | undefined;
  const expiries = [...row.windows.map(storedExpiry), ...(row.reservations ?? []).map(reservationExpiry)];
  for (const expires of expiries) if (expires !== undefined && (latest === undefined || expires > latest)) latest = expires;
  return latest;
}

/**
 * The row as the table stores it: `window_ms` and `state`. The seed's form: the window length and its
 * sub-windows flat, [start, end, count, …] (a third of the JSON of the objects). Several windows: `window_ms` 0
 * and one list per window, its key first: ["s60000", start, end, count, …] or ["month+0", start, end, count]; then,
 * when it keeps reservations, ["r", id, at, cost, "s60000 month+0", …] (the keys of each reservation's windows).
 */
export function encodeRow(row: BucketRow): { windowMs: number; text: string } {
  if (isSeedRow(row)) return { windowMs: row.windowMs, text: JSON.stringify(row.state.subWindows.flatMap((sub) => [sub.start, sub.end, sub.count])) };
  const lists = row.windows.map((stored) =>
    isStoredCalendar(stored)
      ? [stored.key, stored.calendar.start, stored.calendar.end, stored.calendar.count]
      : [stored.key, ...stored.state.subWindows.flatMap((sub) => [sub.start, sub.end, sub.count])],
  );
  const reservations = (row.reservations ?? []).flatMap((reservation) => [reservation.id, reservation.at, reservation.cost, reservation.keys.join(" ")]);
  return { windowMs: 0, text: JSON.stringify(reservations.length > 0 ? [...lists, ["r", ...reservations]] : lists) };
}

function reservationsIn(list: readonly unknown[]): Reservation[] {
  const reservations: Reservation[] = [];
  for (let i = 1; i + 3 < list.length; i += 4) {
    reservations.push({ id: String(list[i]), at: list[i + 1] as number, cost: list[i + 2] as number, keys: String(list[i + 3]).split(" ") });
  }
  return reservations;
}

function subWindowsOf(flat: readonly unknown[], from: number): WindowState {
  const subWindows = [];
  for (let i = from; i + 2 < flat.length; i += 3) subWindows.push({ start: flat[i] as number, end: flat[i + 1] as number, count: flat[i + 2] as number });
  return { subWindows };
}

export function decodeRow(windowMs: number, text: string): BucketRow {
  const parsed = JSON.parse(text) as unknown[];
  if (windowMs > 0) return { windowMs, state: subWindowsOf(parsed, 0) };
  const windows: StoredWindow[] = [];
  let reservations: Reservation[] | undefined;
  for (const list of parsed as unknown[][]) {
    const key = String(list[0]);
    if (key === "r") {
      reservations = reservationsIn(list);
      continue;
    }
    const calendar = calendarOfKey(key);
    if (calendar) {
      const [, start, end, count] = list as [string, number, number, number];
      windows.push({ key, calendar: { start, end, count } satisfies CalendarState });
    } else windows.push({ key, windowMs: Number(key.slice(1)), state: subWindowsOf(list, 1) });
  }
  return reservations ? { windows, reservations } : { windows };
}

function isCost(cost: unknown): boolean {
  return Number.isInteger(cost) && (cost as number) >= 0 && (cost as number) <= MAX_COST;
}

const RESERVATION_PROBLEM = "a reservation id is 1 to 64 letters, digits, - or _";

/** Why the object will not settle a reservation (undefined: it will). */
export function settleProblem(request: SettleRequest): string | undefined {
  if (!isCost(request.cost)) return `a settled cost is an integer from 0 to ${MAX_COST}`;
  return typeof request.reservation === "string" && RESERVATION_ID.test(request.reservation) ? undefined : RESERVATION_PROBLEM;
}

/** Why the object will not decide a take's windows or cost (undefined: it will). Bounds a wrong caller's work. */
export function takeProblem(request: TakeRequest): string | undefined {
  if (!(Number.isSafeInteger(request.leaseMs) && request.leaseMs >= 0 && request.leaseMs <= MAX_LEASE_MS)) return `a lease lasts 0 to ${MAX_LEASE_MS} ms`;
  if (request.cost !== undefined && !isCost(request.cost)) return `a cost is an integer from 0 to ${MAX_COST}`;
  if (request.reserve !== undefined && !(typeof request.reserve === "string" && RESERVATION_ID.test(request.reserve))) return RESERVATION_PROBLEM;
  if (request.windows === undefined) return request.spec === undefined ? "a take has a window" : undefined;
  if (!Array.isArray(request.windows) || request.windows.length < 1 || request.windows.length > MAX_WINDOWS) return `a take has 1 to ${MAX_WINDOWS} windows`;
  for (const rule of request.windows) {
    if (!(Number.isInteger(rule.capacity) && rule.capacity >= 1)) return "a window's capacity is a positive integer";
    if (
      isCalendar(rule)
        ? !CALENDAR_PERIODS.includes(rule.period) || !(Math.abs(rule.offsetMinutes) <= MAX_OFFSET_MINUTES)
        : !(rule.windowMs >= 1 && rule.windowMs <= MAX_WINDOW_MS)
    ) {
      return "a window is a length of at most 31 days or a calendar period";
    }
  }
  return undefined;
}
