/**
 * The RateLimitCounter the gateway gives to policies: buckets (ingress instance or global, scope, action, bucket key) named
 * by a SHA-256 of those and kept many to an object (src/limiter/bucket-shards.ts), a time budget per call, and
 * the isolate's memory of buckets
 * (src/limiter/isolate-buckets.ts) so floods and busy buckets rarely call an object at all.
 * Fail-open lives here and only here: any failure becomes `ok: false` and the request proceeds.
 */

import type { Env } from "../env.ts";
import { shardName } from "../limiter/bucket-shards.ts";
import { CallsInFlight } from "../limiter/calls-in-flight.ts";
import type { SettleRequest, TakeRequest } from "../limiter/bucket-table.ts";
import { resentTake } from "../limiter/bucket-row.ts";
import { QUIET_LEASE_MIN_CAPACITY } from "../limiter/bucket-memory.ts";
import type { IsolateBuckets, ObjectCall } from "../limiter/isolate-buckets.ts";
import type { StoreRefusal } from "../limiter/limiter-object.ts";
import type { LeaseDecision, WindowSpec } from "../limiter/sliding-window.ts";
import { isCalendar, leasable, type LimitSpec, limitOf } from "../limiter/window-rules.ts";
import { settingsOf } from "../settings.ts";
import type { ActionServices, AfterResponse, BucketRef, CountResult, RateLimitCounter } from "../policy/exchange.ts";
import { analyticsDataset, decisionSink } from "./decision-sink.ts";

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

/** One call to the object holding the takes' bucket, made by the request that sends it: the takes' decisions, in order. */
async function takeFromStore(env: Env, shard: string, takes: readonly TakeRequest[], now: number): Promise<LeaseDecision[]> {
  const store = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(shard));
  const answer = (await store.takeAll(takes, now)) as LeaseDecision[] | StoreRefusal;
  if (!Array.isArray(answer)) throw new Error(`the store refused the call: ${answer.refused}`);
  if (answer.length !== takes.length) throw new Error(`the store answered ${answer.length} decisions for ${takes.length} takes`);
  return answer;
}

type InFlight = CallsInFlight<TakeRequest, LeaseDecision>;
/** Per isolate (its bucket memory): the buckets with a call out, and the takes waiting to ride the next one. */
const inFlightOf = new WeakMap<IsolateBuckets, InFlight>();

function inFlight(buckets: IsolateBuckets): InFlight {
  let calls = inFlightOf.get(buckets);
  if (!calls) inFlightOf.set(buckets, (calls = new CallsInFlight(buckets.now)));
  return calls;
}

/**
 * A request's take decided by its bucket's store object (`shard`). When this isolate already has a call out on that
 * object, the take waits to ride the next call (src/limiter/calls-in-flight.ts), whichever buckets of the object the
 * takes are for, looking at its ticket on its own timer: no promise passes between requests, as the Workers runtime
 * ties a promise's continuations to the request whose I/O settled it (docs/rate-limits.md). Otherwise, or when no
 * call answered for it, the request sends the call itself, carrying the takes waiting then, under its
 * `afterResponse` (the request's waitUntil): a call carrying other requests' takes is finished, and their answers
 * written, even when this request's client goes away. A take that cannot wait (too many do), whose wait ended while
 * the object's call is still out, or whose carrying call failed, goes alone: only a request's own call failing ends
 * in the counting error. A request waits at most two time limits, and then its own call takes at most one.
 */
async function decideTake(
  env: Env,
  buckets: IsolateBuckets,
  shard: string,
  take: TakeRequest,
  sent: number,
  timeoutMs: number,
  afterResponse: AfterResponse | undefined,
): Promise<LeaseDecision> {
  const calls = inFlight(buckets);
  // A take goes alone when a call is out on its object that it cannot (or could not) ride.
  let alone = calls.isOut(shard, timeoutMs);
  if (alone && calls.canWait(shard, timeoutMs)) {
    const ticket = calls.wait(shard, take, sent);
    let slept = 0;
    // Waits end when the call out goes stale; on a clock that stands still (tests inject one) the time slept bounds them.
    while (slept < 2 * timeoutMs && !calls.settled(shard, ticket, timeoutMs)) {
      const delay = Math.min(calls.sleepMs(shard, ticket), 2 * timeoutMs - slept);
      await new Promise((resolve) => setTimeout(resolve, delay));
      slept += delay;
    }
    calls.abandon(ticket);
    const outcome = ticket.outcome;
    if (outcome && "answer" in outcome) {
      buckets.stats.objectCalls--;
      buckets.stats.takesCarried++;
      return outcome.answer;
    }
    // Carried by a call that failed or went stale (its request may have gone away, its call cancelled), or still
    // out when this wait ended: sent again, without what that call may have applied (see resentTake).
    if (ticket.carriedAt !== undefined) take = resentTake(take);
    // A call is out on the object still (this wait ended on its bound, or it has no room): the take goes alone.
    alone = calls.isOut(shard, timeoutMs);
  }
  if (alone) {
    const [answer] = await withTimeout(takeFromStore(env, shard, [take], Math.max(sent, buckets.now())), timeoutMs);
    return answer!;
  }
  const { call, carried } = calls.send(shard, timeoutMs);
  const carry = (async () => {
    try {
      // One turn of the event loop first, as the object's group commit waits one: requests already arrived reach
      // their takes meanwhile and ride this call (what a call costs is mostly per call: see docs/rate-limits.md).
      await new Promise((resolve) => setTimeout(resolve, 0));
      calls.collect(shard, call, timeoutMs, carried);
      // Decided no earlier than now, nor than any carried take was made: a lease is used until its take's time plus its length.
      const now = carried.reduce((latest, ticket) => Math.max(latest, ticket.sent), Math.max(sent, buckets.now()));
      const answers = await withTimeout(takeFromStore(env, shard, [take, ...carried.map((ticket) => ticket.take)], now), timeoutMs);
      for (const [i, ticket] of carried.entries()) ticket.outcome = { answer: answers[i + 1]! };
      return answers[0]!;
    } catch (error) {
      for (const ticket of carried) ticket.outcome = { error: error as Error };
      throw error;
    } finally {
      calls.end(shard, call, carried);
    }
  })();
  afterResponse?.waitUntil(carry.catch(() => undefined));
  return carry;
}

/**
 * One take of bucket `id`, as the object's `takeAll` reads it: the seed's form (one sliding window at cost 1,
 * leases) exactly as before, any other form as its windows and cost, decided without leases.
 */
function takeOf(id: string, limit: LimitSpec, leases: boolean, call: ObjectCall, forRequest: boolean): TakeRequest {
  const [first] = limit.windows;
  if (leases && first && !isCalendar(first)) {
    return { id, spec: { capacity: first.capacity, windowMs: first.windowMs }, want: call.want, leaseMs: call.leaseMs, returned: call.returned, forRequest };
  }
  const take: TakeRequest = { id, windows: limit.windows, cost: limit.cost, want: 1, leaseMs: 0, returned: call.returned, forRequest: true };
  return limit.reserve === undefined ? take : { ...take, reserve: limit.reserve };
}

/**
 * Sends a reservation's settled cost to its bucket's object, after the response (the caller's waitUntil). One
 * attempt: a settle lost to a failure keeps the estimate, which never admits more than the windows allow. A
 * refund (`refunded`: the settled cost is below the estimate) may make room before the wait this isolate was told
 * when it was last refused, so it stops answering "limited" from memory.
 */
async function settleInStore(env: Env, shard: string, settle: SettleRequest, timeoutMs: number, now: number, refunded?: () => void): Promise<void> {
  try {
    const store = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(shard));
    const answer = await withTimeout(store.settleAll([settle], now) as Promise<{ applied: boolean[] } | StoreRefusal>, timeoutMs);
    if ("refused" in answer) throw new Error(`the store refused the settle: ${answer.refused}`);
    if (answer.applied[0]) refunded?.();
  } catch (error) {
    console.error(`rate-limit: settling a cost failed, the estimate stays: ${(error as Error).message}`);
  }
}

export function durableObjectCounter(env: Env, ingress: string, buckets: IsolateBuckets): RateLimitCounter {
  const timeoutMs = settingsOf(env).rateLimitTimeoutMs;
  return {
    async count(bucket: BucketRef, spec: WindowSpec | LimitSpec, afterResponse?: AfterResponse): Promise<CountResult> {
      // Whatever a client put in the key (a 60 KB header), the isolate and the object see 43 characters.
      const name = { ingress: bucket.global ? null : ingress, scope: bucket.scope, action: bucket.action, key: bucket.key };
      const known = buckets.ids.idOf(name);
      const id = typeof known === "string" ? known : await known;
      const limit = limitOf(spec);
      const leases = leasable(limit);
      const need = Math.max(1, limit.cost);
      const quietLease = leases && (limit.windows[0]?.capacity ?? 0) >= QUIET_LEASE_MIN_CAPACITY;
      const consulted = buckets.consult(id, leases && afterResponse !== undefined, { need, rulesKey: limit.key, leases, quietLease });
      if ("decision" in consulted) {
        if (consulted.renewal) afterResponse!.waitUntil(renewLease(env, buckets, shardName(name, id), id, limit, consulted.renewal, timeoutMs));
        return { ok: true, decision: consulted.decision, bucketId: id };
      }
      let answer: LeaseDecision;
      try {
        answer = await decideTake(env, buckets, shardName(name, id), takeOf(id, limit, leases, consulted, true), consulted.sent, timeoutMs, afterResponse);
      } catch (error) {
        const timedOut = error instanceof CounterTimeout;
        console.error(`rate-limit: counting failed, request proceeds: ${(error as Error).message}`);
        return {
          ok: false,
          code: timedOut ? "ERR_RATE_LIMIT_TIMEOUT" : "ERR_RATE_LIMIT_UNAVAILABLE",
          message: timedOut ? (error as Error).message : `the rate limiter failed: ${(error as Error).message}`,
          bucketId: id,
        };
      }
      const decision = buckets.settle(id, consulted, answer, need);
      const reservation = limit.reserve;
      if (reservation === undefined || !answer.allowed) return { ok: true, decision, bucketId: id };
      const shard = shardName(name, id);
      const refunded = () => buckets.forgetLimited(id);
      return {
        ok: true,
        decision,
        bucketId: id,
        settle: (cost) => settleInStore(env, shard, { id, reservation, cost }, timeoutMs, buckets.now(), cost < limit.cost ? refunded : undefined),
      };
    },
  };
}

/**
 * Asks the bucket's object for a lease ahead (no request waits for it) and hands the answer to the isolate's
 * memory. A failure costs only the lease: requests then go to the object one by one, as if it had not been asked.
 */
async function renewLease(env: Env, buckets: IsolateBuckets, shard: string, id: string, limit: LimitSpec, call: ObjectCall, timeoutMs: number): Promise<void> {
  try {
    const [answer] = await withTimeout(takeFromStore(env, shard, [takeOf(id, limit, true, call, false)], call.sent), timeoutMs);
    buckets.settleRenewal(id, call, answer!);
  } catch (error) {
    console.error(`rate-limit: renewing a lease failed, requests are counted one by one until the next: ${(error as Error).message}`);
  }
}

/**
 * What the gateway gives a request's policy run: the counter, and the sink its decisions and logs go to. With an
 * analytics dataset the sink counts its data points per request, so each request gets its own.
 */
export function rateLimitServices(env: Env, ingress: string, buckets: IsolateBuckets): ActionServices {
  const dataset = analyticsDataset(env);
  return {
    counter: durableObjectCounter(env, ingress, buckets),
    decisions: decisionSink({ ingress, log: buckets.decisionLog, dataset }),
  };
}

/**
 * An isolate's rate-limit services, the last ones made without an analytics dataset: they hold no per-request
 * state, so requests of the same env, ingress and buckets share them (a flood builds none).
 */
export class RateLimitServicesMemory {
  private shared: { env: Env; ingress: string; buckets: IsolateBuckets; services: ActionServices } | undefined;

  of(env: Env, ingress: string, buckets: IsolateBuckets): ActionServices {
    const shared = this.shared;
    if (shared?.env === env && shared.ingress === ingress && shared.buckets === buckets) return shared.services;
    const services = rateLimitServices(env, ingress, buckets);
    if (!analyticsDataset(env)) this.shared = { env, ingress, buckets, services };
    return services;
  }
}
