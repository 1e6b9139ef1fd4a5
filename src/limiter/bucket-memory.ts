/**
 * One bucket's record in an isolate's memory (isolate-buckets.ts) and the lease arithmetic on it: pure
 * functions of the record and the time.
 */

import type { WindowDecision } from "./sliding-window.ts";

/** How long leased admissions may be used. */
export const LEASE_MS = 1000;
/**
 * How long a quiet bucket's lease may be used (isolate-buckets.ts): long enough that a client coming back every
 * 20 s uses it. Leased admissions are recorded at the end of their lease (`take`), so any length is exact; the
 * used ones are moved back to the time of the next call, which hands them back (`LeaseReturn`), so the length
 * keeps counted longer only what a lease holds unused (at most QUIET_LEASE) and what is used since the last call.
 */
export const QUIET_LEASE_MS = 60_000;
/** Admissions a quiet bucket asks for beyond its request's own. */
export const QUIET_LEASE = 4;
/**
 * Smallest capacity a quiet bucket leases at. `take` leases at most a tenth of the room; below this, a quiet
 * client's few requests are decided one by one, as before.
 */
export const QUIET_LEASE_MIN_CAPACITY = 1000;
/** Leased admissions are given up this long before the object's deadline, for clock differences. */
export const LEASE_MARGIN_MS = 100;
/**
 * Most admissions asked for in one lease. A lease is sized by the previous lease period's demand, so a busy
 * bucket calls its object about once a period (the rate one isolate can lease for: docs/benchmark.md#figures-behind-constants-in-the-code);
 * unused admissions are handed back, and `take` never leases more than a tenth of the room.
 */
const MAX_LEASE = 4096;
/** Requests in one epoch that make a bucket busy before its epoch is over (see `observe`). */
export const BUSY_EPOCH = 32;
/** A lease is renewed when 1/RENEW_AT of a lease period's demand, or of the period, is left (see `renewalDue`). */
const RENEW_AT = 4;

export interface BucketMemory {
  /** The bucket admits nothing before this time (0: not known to be limited). */
  blockedUntil: number;
  /** Admissions leased to this isolate and not used yet, usable while now < useBy (0 once the deadline has passed). */
  slots: number;
  useBy: number;
  /** The object's sub-window the current lease (all of `slots`) is recorded in, and its window's length. */
  leaseStart: number;
  leaseWindowMs: number;
  /** Admissions of the current lease used so far. */
  used: number;
  /**
   * What goes back with the next object call (a `LeaseReturn`) of the lease recorded in the sub-window at
   * `returnStart` of the window `returnWindowMs` long: `returnCount` unused admissions and `returnUsed` used ones.
   */
  returnStart: number;
  returnWindowMs: number;
  returnCount: number;
  returnUsed: number;
  /** Requests seen in the current and the previous lease epoch: the demand a lease is sized by. */
  epoch: number;
  seenThisEpoch: number;
  seenLastEpoch: number;
  /** When the lease request in flight was sent (0: none in flight). */
  askedAt: number;
  /** What the object last said: admissions it had not handed out, and when more would become available. */
  objectRemaining: number;
  refillAt: number;
  /** `blockedUntil` holds for requests of at least this cost (a refused cost of 5 says nothing of a cost of 1). */
  blockedNeed: number;
  /** The rules (windows and capacities) the bucket was last decided by; '' before it was, or when they never change. */
  rulesKey: string;
}

/** A bucket this isolate has not seen yet. */
export function newBucketMemory(): BucketMemory {
  return {
    blockedUntil: 0,
    slots: 0,
    useBy: 0,
    leaseStart: 0,
    leaseWindowMs: 0,
    used: 0,
    returnStart: 0,
    returnWindowMs: 0,
    returnCount: 0,
    returnUsed: 0,
    epoch: 0,
    seenThisEpoch: 0,
    seenLastEpoch: 0,
    askedAt: 0,
    objectRemaining: 0,
    refillAt: 0,
    blockedNeed: 1,
    rulesKey: "",
  };
}

/**
 * A decision answered with a leased admission. `remaining` is what the object had not handed out when it
 * last answered plus what this isolate still holds leased: the same count an object answer carries.
 */
export function leasedAdmission(memory: BucketMemory, now: number): WindowDecision {
  return { allowed: true, remaining: memory.objectRemaining + memory.slots, retryAfterMs: 0, resetMs: 0, refillMs: Math.max(0, memory.refillAt - now) };
}

/** Renew early once less than a quarter of a lease period's demand, or of the period, is left. */
export function renewalDue(memory: BucketMemory, now: number, want: number): boolean {
  if (memory.slots === 0 || now >= memory.useBy) return false;
  return memory.slots <= want / RENEW_AT || memory.useBy - now <= LEASE_MS / RENEW_AT;
}

/**
 * Moves the current lease to the hand-back: what it still holds, which taking back cannot over-admit, and what it
 * used, so the object counts those from the call that hands them back rather than from the lease's end.
 * Only one sub-window's hand-back is kept; an older one still pending is given up (it only stays counted longer).
 */
function retire(memory: BucketMemory): void {
  if (memory.slots === 0 && memory.used === 0) return;
  handBack(memory, { start: memory.leaseStart, windowMs: memory.leaseWindowMs }, memory.slots, memory.used);
  memory.slots = 0;
  memory.used = 0;
}

/** Where a lease is recorded: the sub-window starting at `start` of the window `windowMs` long (0: not known). */
export interface LeasePlace {
  readonly start: number;
  readonly windowMs: number;
}

/** Where the object's answer says its lease is recorded. */
export function placeOf(answer: { leaseStart: number; leaseWindowMs?: number }): LeasePlace {
  return { start: answer.leaseStart, windowMs: answer.leaseWindowMs ?? 0 };
}

/** Leased admissions recorded at `place` go to the hand-back (see `retire`): `count` that will never be used, `used` that were. */
export function handBack(memory: BucketMemory, { start, windowMs }: LeasePlace, count: number, used = 0): void {
  if (pendingHandBack(memory) && memory.returnStart === start && memory.returnWindowMs === windowMs) {
    memory.returnCount += count;
    memory.returnUsed += used;
  } else {
    memory.returnStart = start;
    memory.returnWindowMs = windowMs;
    memory.returnCount = count;
    memory.returnUsed = used;
  }
}

/** Whether a hand-back waits for the next object call. */
export function pendingHandBack(memory: BucketMemory): boolean {
  return memory.returnCount > 0 || memory.returnUsed > 0;
}

/** Takes one leased admission at `now`, when the lease holds one usable then. */
export function useLeased(memory: BucketMemory, now: number): boolean {
  if (memory.slots === 0 || now >= memory.useBy) return false;
  memory.slots--;
  memory.used++;
  return true;
}

/**
 * Past the deadline, or used up, the lease goes to the hand-back: its unused admissions, and its used ones, so the
 * call about to be made takes them back to its time.
 */
export function expire(memory: BucketMemory, now: number): void {
  if (now >= memory.useBy || memory.slots === 0) retire(memory);
}

/**
 * Takes in `count` admissions leased until `useBy`, recorded in the object's sub-window starting at `start`. The new
 * lease replaces the one held (renewed early): that one's remaining admissions are handed back, never used past
 * their own deadline.
 */
export function lease(memory: BucketMemory, now: number, useBy: number, place: LeasePlace, count: number): void {
  retire(memory);
  if (now >= useBy) {
    // A slow answer, past its own deadline: none of it may be used, all of it goes back.
    handBack(memory, place, count);
    return;
  }
  memory.slots = count;
  memory.useBy = useBy;
  memory.leaseStart = place.start;
  memory.leaseWindowMs = place.windowMs;
}

/**
 * Counts the request in its epoch and returns how many admissions a lease should ask for: the previous epoch's
 * requests; once this epoch has seen BUSY_EPOCH requests, the requests of the last lease period estimated from
 * both epochs (a sliding-window count), so a bucket that turns busy gets leases within its first period instead
 * of after it, while short bursts (which leave leases unused) are still decided one by one.
 */
export function observe(memory: BucketMemory, now: number): number {
  const epoch = Math.floor(now / LEASE_MS);
  if (epoch !== memory.epoch) {
    memory.seenLastEpoch = epoch === memory.epoch + 1 ? memory.seenThisEpoch : 0;
    memory.seenThisEpoch = 0;
    memory.epoch = epoch;
  }
  memory.seenThisEpoch++;
  if (memory.seenThisEpoch < BUSY_EPOCH) return Math.min(MAX_LEASE, Math.max(1, memory.seenLastEpoch));
  const previousShare = 1 - (now - epoch * LEASE_MS) / LEASE_MS;
  return Math.min(MAX_LEASE, Math.max(memory.seenLastEpoch, Math.floor(memory.seenThisEpoch + memory.seenLastEpoch * previousShare)));
}

/**
 * The bucket is now decided by the rules named `key` (a tier switch): what was remembered under other rules no
 * longer holds. A lease taken under them goes to the hand-back (its admissions were counted against the old
 * capacity, so using them could pass the new one), and "limited until" is forgotten (the new capacity may admit).
 */
export function switchRules(memory: BucketMemory, key: string): void {
  if (memory.rulesKey === key) return;
  if (memory.rulesKey !== "") {
    retire(memory);
    memory.blockedUntil = 0;
  }
  memory.rulesKey = key;
}

/**
 * Whether the answer to a call sent under the rules named `key` may be taken in: the bucket is still decided by
 * them (undefined: rules that never change). Its lease was counted against their capacity, so under others it is
 * handed back unused, as `switchRules` does. A memory made since the call (the isolate forgot the bucket) takes
 * `key` as its rules, so that a switch retires the lease.
 */
export function answeredUnderRules(memory: BucketMemory, key: string | undefined): boolean {
  if (key === undefined || memory.rulesKey === key) return true;
  if (memory.rulesKey !== "") return false;
  memory.rulesKey = key;
  return true;
}
