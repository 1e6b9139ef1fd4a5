/**
 * The end-to-end accuracy run: a bursty, random schedule of requests on one bucket of the real
 * Worker (workerd, Durable Object, isolate cache and all), in real time, compared with an exact
 * sliding-log oracle fed the same requests.
 */

import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { busiestObservedWindow, overAdmittedObserved, slidingLogDecisions, type ObservedAdmission } from "./oracle.ts";
import { seededRandom } from "../shared/stats.ts";

export interface Burst {
  /** Milliseconds after the start of the run. */
  readonly at: number;
  readonly requests: number;
  readonly concurrency: number;
}

/**
 * Opens with 150 requests 50 at a time (exactly `capacity` = 100 must pass), then bursts of random
 * size and concurrency after random pauses, until `durationMs`.
 */
export function burstySchedule(seed: number, durationMs: number): Burst[] {
  const random = seededRandom(seed);
  const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const bursts: Burst[] = [{ at: 0, requests: 150, concurrency: 50 }];
  let at = between(500, 2000);
  while (at < durationMs) {
    bursts.push(random() < 0.3 ? { at, requests: between(15, 60), concurrency: between(8, 40) } : { at, requests: between(1, 8), concurrency: between(1, 4) });
    at += random() < 0.2 ? between(2000, 5000) : between(100, 1500);
  }
  return bursts;
}

interface Observation extends ObservedAdmission {
  /** 0 when no answer came. */
  readonly status: number;
  readonly retryAfter: string | null;
  readonly error?: string;
}

export interface AccuracyOptions {
  /** URL of the rate-limited route. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly capacity: number;
  readonly windowMs: number;
  readonly durationMs: number;
  readonly seed: number;
}

export interface AccuracyReport {
  readonly requests: number;
  readonly admitted: number;
  readonly limited: number;
  /** Requests answered neither 200 nor 429 (an admission may hide among them, so this must be 0 for the figures to hold). */
  readonly failures: number;
  /** What the first few failures were. */
  readonly failureSamples: readonly string[];
  /** Admissions of the exact sliding log fed the same requests at their send times. */
  readonly oracleAdmitted: number;
  /** Admissions that certainly exceeded capacity in their window (must be 0). */
  readonly overAdmitted: number;
  /** The most admissions seen certainly inside one window. */
  readonly busiestWindow: number;
  /** How many fewer requests than the oracle were admitted, as a share of the oracle's. */
  readonly underAdmissionPercent: number;
  /** 429s without a whole-second retry-after ≥ 1. */
  readonly limitedWithoutRetryAfter: number;
  readonly elapsedMs: number;
}

async function send(url: string, headers: Readonly<Record<string, string>>): Promise<Observation> {
  const sent = performance.now();
  try {
    const response = await fetch(url, { headers });
    const answered = performance.now();
    await response.arrayBuffer();
    return { sent, answered, status: response.status, retryAfter: response.headers.get("retry-after") };
  } catch (error) {
    const cause = (error as Error).cause as Error | undefined;
    return { sent, answered: performance.now(), status: 0, retryAfter: null, error: `${(error as Error).message}${cause ? `: ${cause.message}` : ""}` };
  }
}

async function runBurst(burst: Burst, options: AccuracyOptions, into: Observation[]): Promise<void> {
  let left = burst.requests;
  const worker = async () => {
    while (left > 0) {
      left--;
      into.push(await send(options.url, options.headers));
    }
  };
  await Promise.all(Array.from({ length: Math.min(burst.concurrency, burst.requests) }, worker));
}

export async function runAccuracy(options: AccuracyOptions): Promise<AccuracyReport> {
  const schedule = burstySchedule(options.seed, options.durationMs);
  const observations: Observation[] = [];
  const start = performance.now();
  const running: Promise<void>[] = [];
  for (const burst of schedule) {
    const wait = start + burst.at - performance.now();
    if (wait > 0) await sleep(wait);
    running.push(runBurst(burst, options, observations));
  }
  await Promise.all(running);
  const elapsedMs = performance.now() - start;

  observations.sort((a, b) => a.sent - b.sent);
  const admittedObservations = observations.filter((o) => o.status === 200);
  const limited = observations.filter((o) => o.status === 429);
  const failed = observations.filter((o) => o.status !== 200 && o.status !== 429);
  const oracle = slidingLogDecisions(
    observations.filter((o) => o.status === 200 || o.status === 429).map((o) => o.sent),
    options.capacity,
    options.windowMs,
  );
  const oracleAdmitted = oracle.filter(Boolean).length;
  return {
    requests: observations.length,
    admitted: admittedObservations.length,
    limited: limited.length,
    failures: failed.length,
    failureSamples: failed.slice(0, 3).map((o) => o.error ?? `status ${o.status}`),
    oracleAdmitted,
    overAdmitted: overAdmittedObserved(admittedObservations, options.capacity, options.windowMs),
    busiestWindow: busiestObservedWindow(admittedObservations, options.windowMs),
    underAdmissionPercent: oracleAdmitted === 0 ? 0 : (100 * (oracleAdmitted - admittedObservations.length)) / oracleAdmitted,
    limitedWithoutRetryAfter: limited.filter((o) => !/^\d+$/.test(o.retryAfter ?? "") || Number(o.retryAfter) < 1).length,
    elapsedMs,
  };
}
