/**
 * What one isolate remembers of the buckets it has asked about, so most requests need no object call:
 * - "limited until T": a flood is answered from memory (never admits early);
 * - leased admissions: a busy bucket's object hands the isolate a few admissions at a time, already
 *   counted and usable for `leaseMs`. A lease is sized by the bucket's traffic in the previous `leaseMs`
 *   (quiet buckets are decided one request at a time) and by the room left (see `take` in sliding-window.ts).
 *
 * Leased admissions left unused when their deadline passes are handed back to the object with the next call
 * on the bucket (`returned`), so a burst that ends early does not leave them counted for a whole window. A
 * bucket known to be limited still makes that one call when it has admissions to hand back.
 *
 * One lease is asked for at a time: while a lease request is in flight, other requests that reach the object
 * ask for one admission only. Concurrent requests of a burst each used to get a lease; only the newest could be
 * handed back, and the others' unused admissions stayed counted for a window (measured: under-admission 2.5 %
 * to 28 % in a simulation of the accuracy run, bench/accuracy-sim.ts, and 0 % with one lease at a time).
 *
 * A busy bucket (BUSY_EPOCH requests a period) renews its lease early: once a quarter of a lease period's demand is left (or a quarter of the
 * period), a new lease is asked for while requests go on using the old one, so they do not queue at the object
 * when a lease runs out. When the caller can run work after its response (`consult(id, true)`), the request that
 * finds the renewal due is itself answered from the old lease and the renewal goes out on its own, a lease asked
 * for ahead that decides no request (`settleRenewal`): no request waits for the object while the bucket stays
 * busy. Otherwise that request goes to the object and waits for its answer. The new lease replaces the old one;
 * what the old one still held is handed back with the next call.
 *
 * Buckets are named by fixed-size ids (hashes of what the client sent), and the memory is bounded by
 * bytes: past `maxBytes` the least recently used bucket is forgotten, which only costs an object call.
 */

import { BucketIdCache } from "./bucket-id-cache.ts";
import { DecisionLog } from "./decision-log.ts";
import { IngressMemo } from "./ingress-memo.ts";
import type { BatcherStats } from "./shard-batcher.ts";
import type { LeaseDecision, LeaseReturn, WindowDecision } from "./sliding-window.ts";

/** Longest bucket id accepted: ids are hashes (43 characters of base64url for SHA-256), never raw keys. */
export const MAX_BUCKET_ID_LENGTH = 64;
/**
 * Heap one remembered bucket costs at most: a Map entry, a 64-character one-byte string and a record of six
 * numbers (measured in V8 at about 200 bytes; see test/unit/isolate-buckets.test.ts), rounded up.
 */
export const BUCKET_ENTRY_BYTES = 256;
/** Default memory bound of one isolate's bucket memory. */
export const BUCKET_MEMORY_BYTES = 4 * 1024 * 1024;
/** How long leased admissions may be used. */
export const LEASE_MS = 1000;
/** Leased admissions are given up this long before the object's deadline, for clock differences. */
const LEASE_MARGIN_MS = 100;
/**
 * Most admissions asked for in one lease. A lease is sized by the previous lease period's demand, so a busy
 * bucket calls its object about once a period (4096: up to about 4,000 requests a second from one isolate);
 * unused admissions are handed back, and `take` never leases more than a tenth of the room.
 */
const MAX_LEASE = 4096;
/** Requests in one epoch that make a bucket busy before its epoch is over (see `observe`). */
const BUSY_EPOCH = 32;
/** A lease is renewed when 1/RENEW_AT of a lease period's demand, or of the period, is left (see `renewalDue`). */
const RENEW_AT = 4;

interface BucketMemory {
  /** The bucket admits nothing before this time (0: not known to be limited). */
  blockedUntil: number;
  /** Admissions leased to this isolate and not used yet, usable while now < useBy (0 once the deadline has passed). */
  slots: number;
  useBy: number;
  /** The object's sub-window the current lease (all of `slots`) is recorded in. */
  leaseStart: number;
  /** Leased admissions to hand back with the next object call: `returnCount` of the sub-window at `returnStart`. */
  returnStart: number;
  returnCount: number;
  /** Requests seen in the current and the previous lease epoch: the demand a lease is sized by. */
  epoch: number;
  seenThisEpoch: number;
  seenLastEpoch: number;
  /** When the lease request in flight was sent (0: none in flight). */
  askedAt: number;
  /** What the object last said: admissions it had not handed out, and when more would become available. */
  objectRemaining: number;
  refillAt: number;
}

export interface BucketStats extends BatcherStats {
  /** Requests (and renewals) that needed the store: each is one take, and takes share store calls (shard-batcher.ts). */
  objectCalls: number;
  /** Of the object calls, the renewals sent after a response, which no request waited for. */
  renewalsAhead: number;
  cachedRejections: number;
  leasedAdmissions: number;
}

export interface IsolateBucketsOptions {
  readonly now?: () => number;
  readonly maxBytes?: number;
}

/** A call to the object: `want` admissions asked for at time `sent`, handing back `returned` leased admissions this isolate will never use. */
export interface ObjectCall {
  readonly want: number;
  readonly sent: number;
  readonly returned?: LeaseReturn;
}

/**
 * Memory answered (`decision`), and when `renewal` is there the caller sends it after the response, as a lease
 * asked for ahead (`forRequest` false), and hands its answer to `settleRenewal`. Or the request goes to the
 * object (an `ObjectCall`) and its answer to `settle`.
 */
export type Consultation = { readonly decision: WindowDecision; readonly renewal?: ObjectCall } | ObjectCall;

/**
 * A decision answered with a leased admission. `remaining` is what the object had not handed out when it
 * last answered plus what this isolate still holds leased: the same count an object answer carries.
 */
function leasedAdmission(memory: BucketMemory, now: number): WindowDecision {
  return { allowed: true, remaining: memory.objectRemaining + memory.slots, retryAfterMs: 0, resetMs: 0, refillMs: Math.max(0, memory.refillAt - now) };
}

export class IsolateBuckets {
  readonly stats: BucketStats = { objectCalls: 0, renewalsAhead: 0, cachedRejections: 0, leasedAdmissions: 0, storeCalls: 0, storeTakes: 0 };
  readonly now: () => number;
  /** Which limited decisions get a log line (one per bucket per second), on the same clock. */
  readonly decisionLog: DecisionLog;
  /** Ids of short bucket names, so a busy bucket is not hashed on every request. */
  readonly ids = new BucketIdCache();
  /** The ingress instance whose buckets these are (read from a request at most once a second). */
  readonly ingress: IngressMemo;
  private readonly maxEntries: number;
  private readonly buckets = new Map<string, BucketMemory>();

  constructor({ now = Date.now, maxBytes = BUCKET_MEMORY_BYTES }: IsolateBucketsOptions = {}) {
    this.now = now;
    this.decisionLog = new DecisionLog({ now });
    this.ingress = new IngressMemo({ now });
    this.maxEntries = Math.max(1, Math.floor(maxBytes / BUCKET_ENTRY_BYTES));
  }

  /** Buckets remembered right now. */
  get size(): number {
    return this.buckets.size;
  }

  /**
   * Answers from memory when it can; otherwise says how many admissions to ask the object for.
   * `renewAhead`: the caller can send a renewal after its response, so a due renewal does not hold up this request.
   */
  consult(id: string, renewAhead = false): Consultation {
    const memory = this.memoryOf(id);
    const sent = this.now();
    let want = observe(memory, sent);
    const leaseIdle = memory.askedAt === 0 || sent - memory.askedAt >= LEASE_MS;
    // Only busy buckets renew early: for a small one a superseded lease's remainder would stay counted until handed back.
    const renew = want >= BUSY_EPOCH && leaseIdle && memory.blockedUntil <= sent && renewalDue(memory, sent, want);
    if (renew && renewAhead && this.takeLeased(memory, sent)) {
      const decision = leasedAdmission(memory, sent);
      this.stats.objectCalls++;
      this.stats.renewalsAhead++;
      memory.askedAt = sent;
      return { decision, renewal: this.callOf(memory, want, sent) };
    }
    if (!renew && this.takeLeased(memory, sent)) return { decision: leasedAdmission(memory, sent) };
    expire(memory, sent);
    if (memory.blockedUntil > sent && memory.returnCount === 0) {
      this.stats.cachedRejections++;
      const wait = memory.blockedUntil - sent;
      return { decision: { allowed: false, remaining: 0, retryAfterMs: wait, resetMs: wait, refillMs: wait } };
    }
    this.stats.objectCalls++;
    if (want > 1) {
      // A request lost in flight (no settle) stops holding back the next lease after a lease period.
      if (!leaseIdle) want = 1;
      else memory.askedAt = sent;
    }
    return this.callOf(memory, want, sent);
  }

  /** A call for `want` admissions at `sent`, taking along what is to be handed back. */
  private callOf(memory: BucketMemory, want: number, sent: number): ObjectCall {
    if (memory.returnCount === 0) return { want, sent };
    const returned = { start: memory.returnStart, count: memory.returnCount };
    memory.returnCount = 0;
    return { want, sent, returned };
  }

  /**
   * Takes in the object's answer to a request sent at `sent`, and returns that request's decision; its
   * `remaining` counts the admissions this isolate holds leased too (see `leasedAdmission`).
   */
  settle(id: string, sent: number, answer: LeaseDecision): WindowDecision {
    const memory = this.memoryOf(id);
    const { granted, ...decision } = answer;
    const now = this.now();
    if (sent === memory.askedAt) memory.askedAt = 0;
    if (decision.allowed) {
      if (granted > 1) lease(memory, now, sent + LEASE_MS - LEASE_MARGIN_MS, answer.leaseStart, granted - 1);
      memory.blockedUntil = 0;
      memory.objectRemaining = decision.remaining;
      memory.refillAt = now + decision.refillMs;
      const held = memory.slots > 0 && now < memory.useBy ? memory.slots : 0;
      return held > 0 ? { ...decision, remaining: decision.remaining + held } : decision;
    }
    // Admissions leased by an earlier answer are already counted: use them before saying no.
    memory.objectRemaining = 0;
    if (this.takeLeased(memory, now)) return leasedAdmission(memory, now);
    memory.blockedUntil = now + decision.retryAfterMs;
    return decision;
  }

  /**
   * Takes in the object's answer to a renewal sent at `sent` (a lease asked for ahead: every admission it
   * granted is leased, none was a request's). A full bucket's answer is remembered as limited; admissions
   * still leased are used first all the same, as they are already counted.
   */
  settleRenewal(id: string, sent: number, answer: LeaseDecision): void {
    const memory = this.memoryOf(id);
    const now = this.now();
    if (sent === memory.askedAt) memory.askedAt = 0;
    if (!answer.allowed) {
      memory.objectRemaining = 0;
      memory.blockedUntil = now + answer.retryAfterMs;
      return;
    }
    if (answer.granted > 0) lease(memory, now, sent + LEASE_MS - LEASE_MARGIN_MS, answer.leaseStart, answer.granted);
    memory.blockedUntil = 0;
    memory.objectRemaining = answer.remaining;
    memory.refillAt = now + answer.refillMs;
  }

  private memoryOf(id: string): BucketMemory {
    if (id.length > MAX_BUCKET_ID_LENGTH) throw new RangeError(`bucket ids are hashes of at most ${MAX_BUCKET_ID_LENGTH} characters, got ${id.length}`);
    let memory = this.buckets.get(id);
    if (memory) {
      // Most recently used last, so the first entry is the one to forget.
      this.buckets.delete(id);
      this.buckets.set(id, memory);
      return memory;
    }
    if (this.buckets.size >= this.maxEntries) this.buckets.delete(this.buckets.keys().next().value!);
    memory = {
      blockedUntil: 0,
      slots: 0,
      useBy: 0,
      leaseStart: 0,
      returnStart: 0,
      returnCount: 0,
      epoch: 0,
      seenThisEpoch: 0,
      seenLastEpoch: 0,
      askedAt: 0,
      objectRemaining: 0,
      refillAt: 0,
    };
    this.buckets.set(id, memory);
    return memory;
  }

  private takeLeased(memory: BucketMemory, now: number): boolean {
    if (memory.slots > 0 && now < memory.useBy) {
      memory.slots--;
      this.stats.leasedAdmissions++;
      return true;
    }
    expire(memory, now);
    return false;
  }
}

/** Renew early once less than a quarter of a lease period's demand, or of the period, is left. */
function renewalDue(memory: BucketMemory, now: number, want: number): boolean {
  if (memory.slots === 0 || now >= memory.useBy) return false;
  return memory.slots <= want / RENEW_AT || memory.useBy - now <= LEASE_MS / RENEW_AT;
}

/**
 * Moves what the current lease still holds to the hand-back: taking back admissions that never happened cannot
 * over-admit. Only one sub-window's hand-back is kept; an older one still pending is given up (it only stays counted).
 */
function retire(memory: BucketMemory): void {
  if (memory.slots === 0) return;
  if (memory.returnCount > 0 && memory.returnStart === memory.leaseStart) memory.returnCount += memory.slots;
  else {
    memory.returnStart = memory.leaseStart;
    memory.returnCount = memory.slots;
  }
  memory.slots = 0;
}

/** Past the deadline, the lease's unused admissions go to the hand-back. */
function expire(memory: BucketMemory, now: number): void {
  if (now >= memory.useBy) retire(memory);
}

/**
 * Takes in `count` admissions leased until `useBy`, recorded in the object's sub-window starting at `start`. The new
 * lease replaces the one held (renewed early): that one's remaining admissions are handed back, never used past
 * their own deadline.
 */
function lease(memory: BucketMemory, now: number, useBy: number, start: number, count: number): void {
  retire(memory);
  if (now >= useBy) {
    // A slow answer, past its own deadline: none of it may be used, all of it goes back.
    memory.slots = count;
    memory.leaseStart = start;
    retire(memory);
    return;
  }
  memory.slots = count;
  memory.useBy = useBy;
  memory.leaseStart = start;
}

/**
 * Counts the request in its epoch and returns how many admissions a lease should ask for: the previous epoch's
 * requests; once this epoch has seen BUSY_EPOCH requests, the requests of the last lease period estimated from
 * both epochs (a sliding-window count), so a bucket that turns busy gets leases within its first period instead
 * of after it, while short bursts (which leave leases unused) are still decided one by one.
 */
function observe(memory: BucketMemory, now: number): number {
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
