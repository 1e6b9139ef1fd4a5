/**
 * What one isolate remembers of the buckets it has asked about, so most requests need no store call:
 * - "limited until T": a flood is answered from memory (never admits early);
 * - leased admissions: a busy bucket's object hands the isolate a few admissions at a time, already
 *   counted and usable for `leaseMs`, sized by the bucket's traffic in the previous `leaseMs` and by the room
 *   left (see `take` in sliding-window.ts); a quiet bucket of a large capacity takes a few for longer (a quiet
 *   lease: QUIET_LEASE for QUIET_LEASE_MS), others are decided one request at a time.
 *
 * Leased admissions left unused at their deadline are handed back with the next call on the bucket
 * (`returned`), so a burst that ends early does not leave them counted for a whole window; a bucket known to be
 * limited still makes that one call when it has unused admissions to hand back (used ones, which the call moves
 * from the lease's end to its own time, wait for the next call). One lease is asked for at a time: while
 * one is in flight, other requests that reach the object ask for one admission only, because only the newest
 * lease could be handed back (docs/rate-limits.md has the measured under-admission of the alternative).
 *
 * A busy bucket (BUSY_EPOCH requests a period) renews its lease early, once a quarter of a period's demand (or
 * of the period) is left, so requests do not queue at the object when a lease runs out. When the caller can run
 * work after its response (`consult(id, true)`), the request that finds the renewal due is answered from the old
 * lease and the renewal goes out on its own, deciding no request (`settleRenewal`); otherwise that request waits
 * for the object. The new lease replaces the old one; what the old one still held is handed back with the next call.
 *
 * Buckets are named by fixed-size ids (hashes of what the client sent), and the memory is bounded by
 * bytes: past `maxBytes` the least recently used bucket is forgotten, which only costs a store call.
 */

import { BucketIdCache } from "./bucket-id-cache.ts";
import { DecisionLog } from "./decision-log.ts";
import { IngressMemo } from "./ingress-memo.ts";
import {
  answeredUnderRules,
  type BucketMemory,
  expire,
  handBack,
  lease,
  LEASE_MARGIN_MS,
  LEASE_MS,
  leasedAdmission,
  QUIET_LEASE,
  QUIET_LEASE_MS,
  newBucketMemory,
  observe,
  pendingHandBack,
  placeOf,
  renewalDue,
  useLeased,
  BUSY_EPOCH,
  switchRules,
} from "./bucket-memory.ts";

import type { LeaseDecision, LeaseReturn, WindowDecision } from "./sliding-window.ts";
import { makeRoom } from "../bounded-map.ts";

/** Longest bucket id accepted: ids are hashes (43 characters of base64url for SHA-256), never raw keys. */
export const MAX_BUCKET_ID_LENGTH = 64;
/**
 * Heap one remembered bucket costs at most: a Map entry, a 64-character one-byte string and a record of six
 * numbers, rounded up. It depends on what ran before in the same process (likely V8 storing a record's numbers
 * boxed once its fields have held other values): docs/benchmark.md#figures-behind-constants-in-the-code.
 */
export const BUCKET_ENTRY_BYTES = 384;
/** Default memory bound of one isolate's bucket memory: 16,384 buckets at BUCKET_ENTRY_BYTES. */
export const BUCKET_MEMORY_BYTES = 6 * 1024 * 1024;

export interface BucketStats {
  /** Requests (and renewals) that needed the store: each is one call to an object, less `takesCarried`. */
  objectCalls: number;
  /** Requests whose take rode another request's call on the same bucket (src/limiter/calls-in-flight.ts). */
  takesCarried: number;
  /** Of the object calls, the renewals sent after a response, which no request waited for. */
  renewalsAhead: number;
  cachedRejections: number;
  leasedAdmissions: number;
}

export interface IsolateBucketsOptions {
  readonly now?: () => number;
  readonly maxBytes?: number;
}

/**
 * A call to the object: `want` admissions asked for at time `sent`, those beyond the request's own to be used
 * within `leaseMs`, handing back `returned` leased admissions this isolate will never use.
 */
export interface ObjectCall {
  readonly want: number;
  readonly sent: number;
  readonly leaseMs: number;
  readonly returned?: LeaseReturn;
  /** The rules the call was sent under (`Demand.rulesKey`): its answer is taken in only while they still decide the bucket. */
  readonly rulesKey?: string;
}

/** What `settle` needs of the call an answer is to: when it was sent, and (when not the defaults) its lease length and rules. */
export type SentCall = Pick<ObjectCall, "sent"> & Partial<Pick<ObjectCall, "leaseMs" | "rulesKey">>;

/**
 * Memory answered (`decision`), and when `renewal` is there the caller sends it after the response, as a lease
 * asked for ahead (`forRequest` false), and hands its answer to `settleRenewal`. Or the request goes to the
 * object (an `ObjectCall`) and its answer to `settle`.
 */
export type Consultation = { readonly decision: WindowDecision; readonly renewal?: ObjectCall } | ObjectCall;

/**
 * What a request asks of its bucket beyond the seed's one admission: `need`, its cost (at least 1: a cost of 0
 * is refused where 1 is); `rulesKey`, the rules deciding it (see `switchRules`); `leases` false for forms decided
 * by the object one request at a time (several windows, calendar periods, costs: window-rules.ts `leasable`).
 */
export interface Demand {
  readonly need: number;
  readonly rulesKey?: string;
  readonly leases: boolean;
  /** The bucket may take a quiet lease (QUIET_LEASE admissions for QUIET_LEASE_MS) when it is not busy: its capacity is large. */
  readonly quietLease?: boolean;
}

export class IsolateBuckets {
  readonly stats: BucketStats = { objectCalls: 0, takesCarried: 0, renewalsAhead: 0, cachedRejections: 0, leasedAdmissions: 0 };
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
  consult(id: string, renewAhead = false, demand?: Demand): Consultation {
    const memory = this.memoryOf(id);
    if (demand?.rulesKey !== undefined) switchRules(memory, demand.rulesKey);
    if (demand && !demand.leases) return this.consultUnleased(memory, demand.need, demand.rulesKey);
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
      return { decision, renewal: this.callOf(memory, want, sent, LEASE_MS, demand?.rulesKey) };
    }
    if (!renew && this.takeLeased(memory, sent)) return { decision: leasedAdmission(memory, sent) };
    expire(memory, sent);
    if (memory.blockedUntil > sent && memory.blockedNeed <= 1 && memory.returnCount === 0) {
      this.stats.cachedRejections++;
      const wait = memory.blockedUntil - sent;
      return { decision: { allowed: false, remaining: 0, retryAfterMs: wait, resetMs: wait, refillMs: wait } };
    }
    this.stats.objectCalls++;
    // A quiet bucket of a large capacity takes a few admissions for longer than a busy one's lease: a client that
    // sends a request every few seconds then calls its object once in QUIET_LEASE + 1 requests, not every time.
    let leaseMs = LEASE_MS;
    if (want <= 1 && demand?.quietLease) {
      want = 1 + QUIET_LEASE;
      leaseMs = QUIET_LEASE_MS;
    }
    if (want > 1) {
      // A request lost in flight (no settle) stops holding back the next lease after a lease period.
      if (!leaseIdle) want = 1;
      else memory.askedAt = sent;
    }
    return this.callOf(memory, want, sent, leaseMs, demand?.rulesKey);
  }

  /** A request of a form that is never leased: answered "limited" from memory for a cost at least the one refused, else one call. */
  private consultUnleased(memory: BucketMemory, need: number, rulesKey: string | undefined): Consultation {
    const sent = this.now();
    expire(memory, sent);
    if (memory.blockedUntil > sent && need >= memory.blockedNeed && memory.returnCount === 0) {
      this.stats.cachedRejections++;
      const wait = memory.blockedUntil - sent;
      return { decision: { allowed: false, remaining: 0, retryAfterMs: wait, resetMs: wait, refillMs: wait } };
    }
    this.stats.objectCalls++;
    return this.callOf(memory, 1, sent, 0, rulesKey);
  }

  /** A call for `want` admissions at `sent`, taking along what is to be handed back. */
  private callOf(memory: BucketMemory, want: number, sent: number, leaseMs: number, rulesKey: string | undefined): ObjectCall {
    const call = rulesKey === undefined ? { want, sent, leaseMs } : { want, sent, leaseMs, rulesKey };
    if (!pendingHandBack(memory)) return call;
    const { returnStart: start, returnWindowMs: windowMs, returnCount: count, returnUsed: used } = memory;
    const place = windowMs > 0 ? { start, windowMs } : { start };
    const returned: LeaseReturn = used > 0 ? { ...place, count, used } : { ...place, count };
    memory.returnCount = 0;
    memory.returnUsed = 0;
    return { ...call, returned };
  }

  /**
   * Takes in the object's answer to `call`, and returns that request's decision; its `remaining` counts the
   * admissions this isolate holds leased too (see `leasedAdmission`). An answer to a call sent under rules the
   * bucket is no longer decided by decides its request only.
   */
  settle(id: string, { sent, leaseMs = LEASE_MS, rulesKey }: SentCall, answer: LeaseDecision, need = 1): WindowDecision {
    const memory = this.memoryOf(id);
    const { granted, ...decision } = answer;
    const now = this.now();
    if (sent === memory.askedAt) memory.askedAt = 0;
    if (!answeredUnderRules(memory, rulesKey)) {
      if (decision.allowed && granted > 1) handBack(memory, placeOf(answer), granted - 1);
      return decision;
    }
    if (decision.allowed) {
      if (granted > 1) lease(memory, now, sent + leaseMs - LEASE_MARGIN_MS, placeOf(answer), granted - 1);
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
    memory.blockedNeed = need;
    return decision;
  }

  /**
   * Takes in the object's answer to a renewal (a lease asked for ahead: every admission it granted is leased,
   * none was a request's). A full bucket's answer is remembered as limited; admissions still leased are used
   * first all the same, as they are already counted. Rules as for `settle`.
   */
  settleRenewal(id: string, { sent, rulesKey }: SentCall, answer: LeaseDecision): void {
    const memory = this.memoryOf(id);
    const now = this.now();
    if (sent === memory.askedAt) memory.askedAt = 0;
    if (!answeredUnderRules(memory, rulesKey)) {
      if (answer.allowed && answer.granted > 0) handBack(memory, placeOf(answer), answer.granted);
      return;
    }
    if (!answer.allowed) {
      memory.objectRemaining = 0;
      memory.blockedUntil = now + answer.retryAfterMs;
      memory.blockedNeed = 1;
      return;
    }
    if (answer.granted > 0) lease(memory, now, sent + LEASE_MS - LEASE_MARGIN_MS, placeOf(answer), answer.granted);
    memory.blockedUntil = 0;
    memory.objectRemaining = answer.remaining;
    memory.refillAt = now + answer.refillMs;
  }

  /**
   * Forgets that the bucket was limited (a refund was applied to it: room may come before the wait the object
   * gave), so its next request asks the object. A bucket not remembered stays so.
   */
  forgetLimited(id: string): void {
    const memory = this.buckets.get(id);
    if (memory) memory.blockedUntil = 0;
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
    makeRoom(this.buckets, this.maxEntries);
    memory = newBucketMemory();
    this.buckets.set(id, memory);
    return memory;
  }

  private takeLeased(memory: BucketMemory, now: number): boolean {
    if (useLeased(memory, now)) {
      this.stats.leasedAdmissions++;
      return true;
    }
    expire(memory, now);
    return false;
  }
}
