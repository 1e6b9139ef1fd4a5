/**
 * The sliding-window counter: pure functions over plain state, with the clock passed in.
 *
 * A window of length `windowMs` is covered by at most `SUB_WINDOWS` consecutive sub-windows
 * (plus the one being filled), each holding the number of requests it admitted. A request
 * at time `now` is admitted only if the sub-windows that overlap (now - windowMs, now]
 * hold fewer than `capacity` admissions. Memory is O(SUB_WINDOWS) whatever the capacity.
 *
 * No over-admission: a sub-window starts on a multiple of its length and its `end` is one past
 * the latest admission recorded in it (not the end of its span), and it is counted whole until
 * `end + windowMs`. So every admission it holds is counted for at least the full window after it
 * happened, and no window of length `windowMs` ever holds more than `capacity` admissions. The
 * price is under-admission: the older admissions of the oldest sub-window stay counted until its
 * latest one leaves the window, at most one sub-window's span (1/SUB_WINDOWS of the window) and
 * less when its admissions came close together (a burst).
 */

export const SUB_WINDOWS = 60;
/**
 * Longest lease an object grants (`take`'s `leaseMs`). Leased admissions are recorded at the lease's end, so a
 * bucket's live sub-windows span at most a window and a lease: this bounds them at 2 × SUB_WINDOWS + 2.
 */
export const MAX_LEASE_MS = 60_000;

export interface WindowSpec {
  /** Admissions allowed in any window of `windowMs`. */
  readonly capacity: number;
  readonly windowMs: number;
}

/**
 * One sub-window: `count` admissions made in [start, end), `start` a multiple of the sub-window length,
 * `end` one past the latest of them, at most `start` + length (a window stored before ends were tight has
 * `end` = `start` + length: as safe, only counted longer). Ends increase along the list.
 */
export interface SubWindow {
  readonly start: number;
  readonly end: number;
  readonly count: number;
}

/** Sub-windows in ascending time order, none of them expired at the time of the last decision. */
export interface WindowState {
  readonly subWindows: readonly SubWindow[];
}

export interface WindowDecision {
  readonly allowed: boolean;
  /** Admissions still possible right now after this decision. */
  readonly remaining: number;
  /** Milliseconds until a request would be admitted; 0 when this one was. */
  readonly retryAfterMs: number;
  /** Milliseconds until every admission counted now has left the window. */
  readonly resetMs: number;
  /**
   * Milliseconds until the oldest admission counted now leaves the window, so that `remaining` grows
   * (when rejected: the same as `retryAfterMs`). The `t` of the RateLimit header field.
   */
  readonly refillMs: number;
  /** With several windows (several-windows.ts): each window's own count, in the order of the rules. */
  readonly windows?: readonly WindowPart[];
}

/** One window of a decision over several: what it has left and when it refills. */
export interface WindowPart {
  readonly remaining: number;
  readonly refillMs: number;
  /** Milliseconds until this window admits the request's cost (0 when it does now). */
  readonly waitMs: number;
}

export const emptyWindow: WindowState = { subWindows: [] };

export function subWindowLength(windowMs: number): number {
  return Math.max(1, Math.ceil(windowMs / SUB_WINDOWS));
}

/** Sub-windows that can still hold an admission inside (now - windowMs, now]. */
export function live(state: WindowState, now: number, windowMs: number): SubWindow[] {
  return state.subWindows.filter((sub) => sub.end + windowMs > now);
}

function total(subWindows: readonly SubWindow[]): number {
  let sum = 0;
  for (const sub of subWindows) sum += sub.count;
  return sum;
}

/**
 * Time until `need` more admissions fit (at most `capacity` counted), given no further admissions: a
 * sub-window stops counting once its end is a full window in the past. A `need` above the capacity never
 * fits: the answer is then the window length.
 */
function waitUntilRoom(subWindows: readonly SubWindow[], now: number, spec: WindowSpec, need: number): number {
  let counted = total(subWindows);
  for (const sub of subWindows) {
    counted -= sub.count;
    if (counted + need <= spec.capacity) return Math.max(1, sub.end + spec.windowMs - now);
  }
  return spec.windowMs;
}

/** One window's view of a weighted request at `now` (see several-windows.ts): what it counts and how long until `need` fits. */
export interface WeightedCheck {
  /** The live sub-windows (the state as of `now`). */
  readonly current: SubWindow[];
  readonly counted: number;
  /** 0 when `need` fits now. */
  readonly waitMs: number;
}

/** Whether `need` admissions fit in the window at `now`, without recording anything. */
export function checkRoom(state: WindowState, now: number, spec: WindowSpec, need: number): WeightedCheck {
  const current = live(state, now, spec.windowMs);
  const counted = total(current);
  return { current, counted, waitMs: counted + need <= spec.capacity ? 0 : waitUntilRoom(current, now, spec, need) };
}

/** `subWindows` (live at `now`) with `count` admissions recorded at `now`: a weighted request counts its whole cost at once. */
export function recordAt(subWindows: SubWindow[], now: number, count: number, windowMs: number): WindowState {
  return { subWindows: count > 0 ? record(subWindows, now, count, subWindowLength(windowMs)) : subWindows };
}

/** Milliseconds until the oldest admission of `subWindows` leaves the window (0 when none is counted). */
export function refillAfter(subWindows: readonly SubWindow[], now: number, windowMs: number): number {
  return subWindows.length > 0 ? Math.max(0, subWindows[0].end + windowMs - now) : 0;
}

/** Decides one request at `now` and returns the next state (unchanged when it is rejected). */
export function hit(state: WindowState, now: number, spec: WindowSpec): { decision: WindowDecision; state: WindowState } {
  const { decision, state: next } = take(state, now, spec, 1, 0);
  const { allowed, remaining, retryAfterMs, resetMs, refillMs } = decision;
  return { decision: { allowed, remaining, retryAfterMs, resetMs, refillMs }, state: next };
}

export interface LeaseDecision extends WindowDecision {
  /**
   * Admissions granted: this request's, plus `granted - 1` the caller may use until `now + leaseMs`. For a
   * lease asked for ahead (`forRequest` false) there is no request: all `granted` are leased, and `allowed`
   * says only that the bucket had room.
   */
  readonly granted: number;
  /** Start of the sub-window the leased admissions are recorded in (0 when none were leased). */
  readonly leaseStart: number;
  /** The length of the window they are recorded in, which their hand-back names (absent when none were leased). */
  readonly leaseWindowMs?: number;
}

/**
 * What an isolate hands back of a lease recorded in the sub-window at `start`: `count` admissions it will never
 * use, taken out (taking back admissions that never happened cannot over-admit; it undoes the under-admission of
 * a lease a burst did not use up); and `used` admissions it did use, moved from the lease's sub-window (recorded
 * at the lease's end) to the object's now, when that is earlier: they all happened before this call, so each is
 * still counted for a full window after it happened, no longer for the rest of its lease besides. Now, not a time
 * the isolate names: isolates' clocks differ, and the object decides by the latest clock its callers gave.
 */
export interface LeaseReturn {
  readonly start: number;
  /**
   * The length of the window the lease was recorded in (`LeaseDecision.leaseWindowMs`): a hand-back that reaches a
   * window of another length (the bucket's rules changed meanwhile) is not applied there, where a sub-window
   * starting at `start` would hold other admissions. Absent (an older isolate): applied to the window decided.
   */
  readonly windowMs?: number;
  readonly count: number;
  readonly used?: number;
}

/**
 * `subWindows` (live at `now`) with `returned` applied to its lease's sub-window at `returned.start`, if that is still
 * live: it then holds every admission of the lease not handed back yet. Gone, its admissions have left the window,
 * and the used ones, which happened before its end, with them.
 */
function giveBack(subWindows: SubWindow[], returned: LeaseReturn | undefined, now: number, windowMs: number): SubWindow[] {
  if (!returned || (returned.windowMs !== undefined && returned.windowMs !== windowMs)) return subWindows;
  const index = subWindows.findIndex((sub) => sub.start === returned.start);
  if (index < 0) return subWindows;
  const sub = subWindows[index];
  const unused = Math.min(sub.count, wholeCount(returned.count));
  // Moved only to an earlier time than where the lease put them: recording at now a lease ending before now would
  // count them longer.
  const moved = now < sub.end ? Math.min(sub.count - unused, wholeCount(returned.used)) : 0;
  if (unused + moved === 0) return subWindows;
  const count = sub.count - unused - moved;
  const next = subWindows.slice();
  if (count > 0) next[index] = { ...sub, count };
  else next.splice(index, 1);
  return moved > 0 ? record(next, now, moved, subWindowLength(windowMs)) : next;
}

/** A count sent by a caller, as a whole number of admissions (0 when it is not one). */
function wholeCount(value: unknown): number {
  return typeof value === "number" && value > 0 ? Math.floor(value) : 0;
}

/**
 * Adds `count` admissions at time `at`, into the sub-window of `at`'s span, made when there is none. Sub-windows
 * are kept in time order, one per span, so they start at least one length apart (which bounds how many are live)
 * and their ends increase. A lease is recorded ahead, at its end: admissions made before that end go into their
 * own spans before its sub-window, so they are counted for a window after they happened, not after the lease.
 */
function record(subWindows: SubWindow[], at: number, count: number, length: number): SubWindow[] {
  const index = lastStartedBy(subWindows, at);
  const sub = subWindows[index];
  const next = subWindows.slice();
  if (sub && at < sub.start + length) next[index] = { ...sub, end: Math.max(sub.end, at), count: sub.count + count };
  else next.splice(index + 1, 0, { start: at - (at % length), end: at, count });
  return next;
}

/** The index of the last sub-window starting at or before `at` (-1: none): the one `record` puts `at` in, when its span holds it. */
function lastStartedBy(subWindows: readonly SubWindow[], at: number): number {
  let index = subWindows.length - 1;
  while (index >= 0 && at < subWindows[index].start) index--;
  return index;
}

/** The index of the sub-window whose span (sub-windows `length` long) holds time `at`, as `record` placed it (-1: none). */
export function spanIndex(subWindows: readonly SubWindow[], at: number, length: number): number {
  const index = lastStartedBy(subWindows, at);
  return index >= 0 && at < subWindows[index].start + length ? index : -1;
}

/**
 * Decides one request at `now` and, when it is admitted and `want` > 1, leases up to `want - 1`
 * further admissions to be used before `now + leaseMs`. Leased admissions are counted from now on
 * and recorded at `now + leaseMs`, so each stays counted for a full window after any moment it
 * could be used: a lease can leave admissions unused (under-admission), never add any (no
 * over-admission). At most a tenth of the remaining room is leased, so near capacity every
 * request is decided here, one by one. `returned`: what the caller hands back of an earlier lease
 * (see `LeaseReturn`), applied before the request is decided. `forRequest` false: a lease asked for
 * ahead, while the caller still holds admissions: no request is decided, up to `want` admissions are
 * leased (again at most a tenth of the room), and none is recorded at `now`.
 */
export function take(
  state: WindowState,
  now: number,
  spec: WindowSpec,
  want: number,
  leaseMs: number,
  returned?: LeaseReturn,
  forRequest = true,
): { decision: LeaseDecision; state: WindowState } {
  const current = giveBack(live(state, now, spec.windowMs), returned, now, spec.windowMs);
  const counted = total(current);
  if (counted >= spec.capacity) {
    const retryAfterMs = waitUntilRoom(current, now, spec, 1);
    return {
      decision: { allowed: false, granted: 0, leaseStart: 0, remaining: 0, retryAfterMs, resetMs: resetAfter(current, now, spec), refillMs: retryAfterMs },
      state: { subWindows: current },
    };
  }
  const room = spec.capacity - counted;
  const own = forRequest ? 1 : 0;
  const leased = leaseMs > 0 ? Math.max(0, Math.min(want - own, Math.floor(room / 10) - own)) : 0;
  const length = subWindowLength(spec.windowMs);
  let next = forRequest ? record(current, now, 1, length) : current;
  if (leased > 0) next = record(next, now + leaseMs, leased, length);
  return {
    decision: {
      allowed: true,
      granted: own + leased,
      leaseStart: leased > 0 ? next[lastStartedBy(next, now + leaseMs)].start : 0,
      ...(leased > 0 ? { leaseWindowMs: spec.windowMs } : {}),
      remaining: room - own - leased,
      retryAfterMs: 0,
      resetMs: resetAfter(next, now, spec),
      refillMs: next.length > 0 ? next[0].end + spec.windowMs - now : 0,
    },
    state: { subWindows: next },
  };
}

export function resetAfter(subWindows: readonly SubWindow[], now: number, spec: WindowSpec): number {
  return subWindows.length > 0 ? Math.max(0, latestEnd(subWindows) + spec.windowMs - now) : 0;
}

/** When every admission in `state` has left the window: the time its storage may be dropped. */
export function expiresAt(state: WindowState, windowMs: number): number | undefined {
  return state.subWindows.length > 0 ? latestEnd(state.subWindows) + windowMs : undefined;
}

/**
 * The latest end among `subWindows`. Ends increase along a list one sub-window length made, but a window whose
 * length changed keeps the longer spans it had, and a sub-window of the new length may be appended inside one of
 * them, ending earlier: the last one's end would let the row be deleted while an earlier one still counts.
 */
function latestEnd(subWindows: readonly SubWindow[]): number {
  let latest = Number.NEGATIVE_INFINITY;
  for (const sub of subWindows) if (sub.end > latest) latest = sub.end;
  return latest;
}
