/**
 * The RateLimitCounter the gateway gives to policies: one RateLimiter Durable Object per
 * (ingress instance, scope, action, bucket key), a time budget per call, and an isolate-local
 * memory of buckets known to be limited until some time, so floods are answered without a call.
 * Fail-open lives here and only here: any failure becomes `ok: false` and the request proceeds.
 */

import type { Env } from "../env.ts";
import type { BucketRef, CountResult, RateLimitCounter } from "../policy/exchange.ts";
import type { WindowDecision, WindowSpec } from "../limiter/sliding-window.ts";

export const DEFAULT_TIMEOUT_MS = 1000;
const BLOCKED_CACHE_LIMIT = 10_000;

/** Bucket object name → the time before which the bucket admits nothing. */
const blockedUntil = new Map<string, number>();

export interface CounterStats {
  objectCalls: number;
  cachedRejections: number;
}

/** Counters of this isolate; the benchmark reads them (GET /__tollgate/stats when TOLLGATE_DEBUG_STATS=1). */
export const counterStats: CounterStats = { objectCalls: 0, cachedRejections: 0 };

function rememberBlocked(name: string, until: number): void {
  if (blockedUntil.size >= BLOCKED_CACHE_LIMIT) {
    const now = Date.now();
    for (const [key, time] of blockedUntil) if (time <= now) blockedUntil.delete(key);
    if (blockedUntil.size >= BLOCKED_CACHE_LIMIT) blockedUntil.delete(blockedUntil.keys().next().value!);
  }
  blockedUntil.set(name, until);
}

/** Forgets every cached limited bucket (tests use it between cases). */
export function clearBlockedCache(): void {
  blockedUntil.clear();
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
      const now = Date.now();
      const until = blockedUntil.get(name);
      if (until !== undefined) {
        if (until > now) {
          counterStats.cachedRejections++;
          const wait = until - now;
          return { ok: true, decision: { allowed: false, remaining: 0, retryAfterMs: wait, resetMs: wait } };
        }
        blockedUntil.delete(name);
      }
      let decision: WindowDecision;
      try {
        counterStats.objectCalls++;
        const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(name));
        decision = await withTimeout(Promise.resolve(stub.hit(spec)) as Promise<WindowDecision>, timeoutMs);
      } catch (error) {
        const timedOut = error instanceof CounterTimeout;
        console.error(`rate-limit: counting failed, request proceeds: ${(error as Error).message}`);
        return {
          ok: false,
          code: timedOut ? "ERR_RATE_LIMIT_TIMEOUT" : "ERR_RATE_LIMIT_UNAVAILABLE",
          message: timedOut ? (error as Error).message : `the rate limiter failed: ${(error as Error).message}`,
        };
      }
      if (!decision.allowed) rememberBlocked(name, Date.now() + decision.retryAfterMs);
      return { ok: true, decision };
    },
  };
}
