/**
 * Costs settled from the response: a request admitted with a reservation (its estimated cost, recorded at the
 * time `at` it was admitted) may later have that cost replaced by the one its response reports. Pure functions
 * of a bucket's windows, its reservations and the time.
 *
 * Exactly once by structure: the bucket keeps each open reservation (its id, `at`, cost and the windows it was
 * recorded in) and a settle both applies the difference and removes the reservation, in one decision the table
 * writes in one transaction. A settle whose reservation is not there (already settled, expired, dropped) changes
 * nothing, so a duplicate is harmless; a settle never made leaves the estimate counted.
 *
 * Still exact: an admission at `at` sits in the sub-window of the span holding `at`, whose `end` is at least `at`,
 * counted until that end plus the window (sliding-window.ts), or in the calendar period `at` falls in. The
 * difference goes to that same sub-window or period, so each window counts the settled cost at least as long as an exact log that had
 * recorded the settled cost at `at` would. A refund never takes more than the sub-window holds, and the
 * reservation's own cost is in it; a charge may take a window past its capacity (the cost was spent), and later
 * requests wait until it drains.
 */

import { periodAt } from "./calendar-period.ts";
import { isStoredCalendar, type StoredWindow } from "./several-windows.ts";
import { live, recordAt, spanIndex, type SubWindow, subWindowLength } from "./sliding-window.ts";
import { calendarOfKey } from "./window-rules.ts";

/** An admitted request whose cost its response may still settle. */
export interface Reservation {
  /** Chosen by the gateway: a random UUID. */
  readonly id: string;
  /** When it was admitted (the object's clock). */
  readonly at: number;
  /** The cost counted for it now: the estimate, until settled. */
  readonly cost: number;
  /** `windowKey` of each window it was recorded in. */
  readonly keys: readonly string[];
}

/** Open reservations a bucket keeps; past this many the oldest is dropped (its estimate stays). */
export const MAX_RESERVATIONS = 256;
/** How long a reservation waits for its settle at most; later its estimate stays. */
export const RESERVATION_TTL_MS = 3_600_000;
/** A reservation id: what a random UUID is made of, bounded. */
export const RESERVATION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The last moment a window with `key` can count an admission made at `at` (undefined: a key of no window). */
function countedUntil(key: string, at: number): number | undefined {
  const calendar = calendarOfKey(key);
  if (calendar) return periodAt(at, calendar.period, calendar.offsetMinutes).end;
  const windowMs = Number(key.slice(1));
  return key.startsWith("s") && windowMs > 0 ? at + windowMs : undefined;
}

/** When the reservation stops mattering: no window counts it any more, or it waited too long for its settle. */
export function reservationExpiry(reservation: Reservation): number {
  let latest = reservation.at;
  for (const key of reservation.keys) latest = Math.max(latest, countedUntil(key, reservation.at) ?? reservation.at);
  return Math.min(latest, reservation.at + RESERVATION_TTL_MS);
}

/** The reservations still open at `now`, the newest `MAX_RESERVATIONS` of them. */
export function openReservations(reservations: readonly Reservation[], now: number): Reservation[] {
  const open = reservations.filter((reservation) => reservationExpiry(reservation) > now);
  return open.length > MAX_RESERVATIONS ? open.slice(open.length - MAX_RESERVATIONS) : open;
}

/** `delta` (settled minus counted) applied to the sub-window holding an admission made at `at`. */
function settleSliding(subWindows: SubWindow[], windowMs: number, at: number, delta: number, now: number): SubWindow[] {
  // No window of length windowMs that ends now or later holds the admission any more: nothing to change.
  if (at + windowMs <= now) return subWindows;
  // A charge goes into the span of `at` (made there when the estimate recorded nothing), never a later one: there
  // a refund that comes after `at` has left the window would stay counted.
  if (delta > 0) return recordAt(subWindows, at, delta, windowMs).subWindows.slice();
  // Only from the span of `at`: a charge stored before charges went there sits in a later sub-window, which holds
  // others' admissions too; its refund is not made (it stays counted until it leaves), as taking from another's
  // count could over-admit.
  const index = spanIndex(subWindows, at, subWindowLength(windowMs));
  if (index < 0) return subWindows;
  const sub = subWindows[index]!;
  const count = sub.count - Math.min(sub.count, -delta);
  const next = subWindows.slice();
  if (count > 0) next[index] = { ...sub, count };
  else next.splice(index, 1);
  return next;
}

/** One window with the difference of a reservation settled; undefined when the window counts nothing (any more). */
function settleWindow(stored: StoredWindow | undefined, key: string, at: number, delta: number, now: number): StoredWindow | undefined {
  const calendar = calendarOfKey(key);
  if (calendar) {
    const { start, end } = periodAt(at, calendar.period, calendar.offsetMinutes);
    const state = stored && isStoredCalendar(stored) ? stored.calendar : undefined;
    if (state && state.start === start) return { key, calendar: { ...state, count: Math.max(0, state.count + delta) } };
    // The admission's period is over (the state is of a later one): no future decision reads it.
    if (state && state.start > start) return stored;
    return delta > 0 && end > now ? { key, calendar: { start, end, count: delta } } : stored;
  }
  const windowMs = Number(key.slice(1));
  if (!(windowMs > 0)) return stored;
  const subWindows = stored && !isStoredCalendar(stored) ? live(stored.state, now, windowMs) : [];
  return { key, windowMs, state: { subWindows: settleSliding(subWindows, windowMs, at, delta, now) } };
}

/**
 * Settles reservation `id` at `cost`: the windows it was recorded in with the difference applied, and the
 * reservations without it. `applied` false (and nothing changed) when no open reservation has that id.
 */
export function settleReservation(
  windows: ReadonlyMap<string, StoredWindow>,
  reservations: readonly Reservation[],
  id: string,
  cost: number,
  now: number,
): { windows: Map<string, StoredWindow>; reservations: Reservation[]; applied: boolean } {
  const open = openReservations(reservations, now);
  // The newest with that id: a take sent again (its first carrier went away) may have recorded it twice, and the
  // older then keeps its estimate until it expires, which can only count more.
  let index = open.length - 1;
  while (index >= 0 && open[index]!.id !== id) index--;
  const next = new Map(windows);
  if (index < 0) return { windows: next, reservations: open, applied: false };
  const [reservation] = open.splice(index, 1);
  const delta = cost - reservation!.cost;
  if (delta !== 0) {
    for (const key of reservation!.keys) {
      const settled = settleWindow(next.get(key), key, reservation!.at, delta, now);
      if (settled) next.set(key, settled);
    }
  }
  return { windows: next, reservations: open, applied: true };
}
