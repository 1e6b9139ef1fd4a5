/**
 * The RateLimitCounter the gateway gives to policies: one RateLimiter Durable Object per
 * (ingress instance, scope, action, bucket key), a time budget per call, and per-isolate memory of
 * each bucket:
 * - "limited until T": floods are answered without calling the object (never admits early);
 * - leased admissions: a busy bucket's object hands this isolate a few admissions at a time, already
 *   counted and valid for LEASE_MS, so most allowed requests need no object call either. A lease is
 *   sized by the bucket's traffic in the previous LEASE_MS (quiet buckets are decided one request at
 *   a time) and by the room left (see `take` in src/limiter/sliding-window.ts).
 * Fail-open lives here and only here: any failure becomes `ok: false` and the request proceeds.
 */

import type { Env } from "../env.ts";
import type { BucketRef, CountResult, RateLimitCounter } from "../policy/exchange.ts";
import type { LeaseDecision, WindowSpec } from "../limiter/sliding-window.ts";

export const DEFAULT_TIMEOUT_MS = 1000;
/** How long leased admissions may be used. */
export const LEASE_MS = 1000;
/** Leased admissions are given up this long before the object's deadline, for clock differences. */
const LEASE_MARGIN_MS = 100;
const MAX_LEASE = 64;
const BUCKET_MEMORY_LIMIT = 10_000;

interface BucketMemory {
  /** The bucket admits nothing before this time (0: not known to be limited). */
  blockedUntil: number;
  /** Admissions leased to this isolate and not used yet, usable while now < useBy. */
  slots: number;
  useBy: number;
  /** Requests seen in the current and the previous LEASE_MS epoch: the demand a lease is sized by. */
  epoch: number;
  seenThisEpoch: number;
  seenLastEpoch: number;
}

/** Bucket object name → what this isolate knows of the bucket. */
const buckets = new Map<string, BucketMemory>();

export interface CounterStats {
  objectCalls: number;
  cachedRejections: number;
  leasedAdmissions: number;
}

/** Counters of this isolate; the benchmark reads them (GET /__tollgate/stats when TOLLGATE_DEBUG_STATS=1). */
export const counterStats: CounterStats = { objectCalls: 0, cachedRejections: 0, leasedAdmissions: 0 };

function memoryOf(name: string): BucketMemory {
  let memory = buckets.get(name);
  if (memory) {
    // Most recently used last, so the first entry is the one to forget.
    buckets.delete(name);
    buckets.set(name, memory);
    return memory;
  }
  if (buckets.size >= BUCKET_MEMORY_LIMIT) buckets.delete(buckets.keys().next().value!);
  memory = { blockedUntil: 0, slots: 0, useBy: 0, epoch: 0, seenThisEpoch: 0, seenLastEpoch: 0 };
  buckets.set(name, memory);
  return memory;
}

/** Forgets everything this isolate knows of buckets (tests use it between cases). */
export function clearBucketMemory(): void {
  buckets.clear();
}

function takeLeased(memory: BucketMemory, now: number): boolean {
  if (memory.slots > 0 && now < memory.useBy) {
    memory.slots--;
    counterStats.leasedAdmissions++;
    return true;
  }
  if (now >= memory.useBy) memory.slots = 0;
  return false;
}

function observe(memory: BucketMemory, now: number): number {
  const epoch = Math.floor(now / LEASE_MS);
  if (epoch !== memory.epoch) {
    memory.seenLastEpoch = epoch === memory.epoch + 1 ? memory.seenThisEpoch : 0;
    memory.seenThisEpoch = 0;
    memory.epoch = epoch;
  }
  memory.seenThisEpoch++;
  return Math.min(MAX_LEASE, Math.max(1, memory.seenLastEpoch));
}

/** Ingress instance: INGRESS_ID if set, else the Cloudflare location, else "local". */
export function ingressId(env: Pick<Env, "INGRESS_ID">, request: Request): string {
  if (env.INGRESS_ID) return env.INGRESS_ID;
  const colo = (request as Request & { cf?: { colo?: unknown } }).cf?.colo;
  return typeof colo === "string" && colo !== "" ? colo : "local";
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CounterTimeout(ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer!));
}

class CounterTimeout extends Error {
  constructor(ms: number) {
    super(`the rate limiter did not answer within ${ms}ms`);
  }
}

export function durableObjectCounter(env: Env, ingress: string): RateLimitCounter {
  const timeoutMs = Number(env.RATE_LIMIT_TIMEOUT_MS) > 0 ? Number(env.RATE_LIMIT_TIMEOUT_MS) : DEFAULT_TIMEOUT_MS;
  return {
    async count(bucket: BucketRef, spec: WindowSpec): Promise<CountResult> {
      const name = JSON.stringify([ingress, bucket.scope, bucket.action, bucket.key]);
      const memory = memoryOf(name);
      const sent = Date.now();
      const want = observe(memory, sent);
      if (takeLeased(memory, sent)) return { ok: true, decision: { allowed: true, remaining: memory.slots, retryAfterMs: 0, resetMs: 0 } };
      if (memory.blockedUntil > sent) {
        counterStats.cachedRejections++;
        const wait = memory.blockedUntil - sent;
        return { ok: true, decision: { allowed: false, remaining: 0, retryAfterMs: wait, resetMs: wait } };
      }

      let decision: LeaseDecision;
      try {
        counterStats.objectCalls++;
        const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(name));
        decision = await withTimeout(Promise.resolve(stub.take(spec, want, LEASE_MS)) as Promise<LeaseDecision>, timeoutMs);
      } catch (error) {
        const timedOut = error instanceof CounterTimeout;
        console.error(`rate-limit: counting failed, request proceeds: ${(error as Error).message}`);
        return {
          ok: false,
          code: timedOut ? "ERR_RATE_LIMIT_TIMEOUT" : "ERR_RATE_LIMIT_UNAVAILABLE",
          message: timedOut ? (error as Error).message : `the rate limiter failed: ${(error as Error).message}`,
        };
      }
      const { granted, ...result } = decision;
      const now = Date.now();
      if (result.allowed) {
        if (granted > 1) {
          // Several leases may be held at once; all are used by the earliest deadline among them.
          const keepOld = memory.slots > 0 && now < memory.useBy;
          const useBy = sent + LEASE_MS - LEASE_MARGIN_MS;
          memory.slots = (keepOld ? memory.slots : 0) + granted - 1;
          memory.useBy = keepOld ? Math.min(memory.useBy, useBy) : useBy;
        }
        memory.blockedUntil = 0;
        return { ok: true, decision: result };
      }
      // Admissions leased by an earlier answer are already counted: use them before saying no.
      if (takeLeased(memory, now)) return { ok: true, decision: { allowed: true, remaining: memory.slots, retryAfterMs: 0, resetMs: 0 } };
      memory.blockedUntil = now + result.retryAfterMs;
      return { ok: true, decision: result };
    },
  };
}
