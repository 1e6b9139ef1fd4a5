/** Turns the per-round samples into one row per target and checks the targets of issue 2. */

import { median, sum } from "./stats.ts";
import type { RoundSample, Target } from "./throughput.ts";

export interface Row {
  readonly target: Target;
  /** Medians over the rounds. */
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** Median over rounds of (this target's req/s ÷ bare's req/s in the same round). */
  readonly ratioToBare: number;
  readonly requests: number;
  readonly failures: number;
  /** Requests that proceeded uncounted because the limiter failed: the row does not measure rate limiting. */
  readonly failOpen: number;
  /** CPU microseconds of the serving workerd per answered request, when known. */
  readonly cpuMicrosPerRequest?: number;
  /** Floods only. */
  readonly limitedShare?: number;
  readonly retryAfterShare?: number;
  readonly objectCallsPer429?: number;
  /** Allowed paths with a counter: object calls per request. */
  readonly objectCallsPerRequest?: number;
}

function perRoundRatio(samples: readonly RoundSample[], reference: readonly RoundSample[]): number {
  return median(samples.map((s, i) => s.result.requestsPerSecond / reference[i]!.result.requestsPerSecond));
}

export function summarize(targets: readonly Target[], samples: ReadonlyMap<string, readonly RoundSample[]>, bareId: string): Row[] {
  const bare = samples.get(bareId)!;
  return targets.map((target) => {
    const own = samples.get(target.id)!;
    const results = own.map((s) => s.result);
    const requests = sum(results.map((r) => r.requests));
    const limited = sum(results.map((r) => r.limited));
    const cpu = own.every((s) => s.cpuSeconds !== undefined) ? sum(own.map((s) => s.cpuSeconds!)) : undefined;
    const calls = own.every((s) => s.objectCalls !== undefined) ? sum(own.map((s) => s.objectCalls!)) : undefined;
    const row: Row = {
      target,
      requestsPerSecond: median(results.map((r) => r.requestsPerSecond)),
      p50: median(results.map((r) => r.p50)),
      p99: median(results.map((r) => r.p99)),
      ratioToBare: perRoundRatio(own, bare),
      requests,
      failures: sum(results.map((r) => r.failures)),
      failOpen: sum(own.map((s) => s.failOpen)),
      cpuMicrosPerRequest: cpu === undefined || requests === 0 ? undefined : (cpu * 1e6) / requests,
    };
    if (target.kind === "flood") {
      return {
        ...row,
        limitedShare: requests === 0 ? 0 : limited / requests,
        retryAfterShare: limited === 0 ? 0 : sum(results.map((r) => r.retryAfterShare * r.limited)) / limited,
        objectCallsPer429: calls === undefined || limited === 0 ? undefined : calls / limited,
      };
    }
    if (target.kind === "allowed" && calls !== undefined && requests > 0) return { ...row, objectCallsPerRequest: calls / requests };
    return row;
  });
}

export interface Check {
  readonly name: string;
  /** Why the figure cannot be trusted, if it cannot. */
  readonly caveat?: string;
  readonly measured: number;
  readonly wanted: number;
  readonly unit: string;
  /** How `measured` compares to `wanted`: at least, at most, or exactly. */
  readonly relation: "≥" | "≤" | "=";
  readonly pass: boolean;
}

/** `a` over `b`, as the median of per-round ratios. */
export function roundRatio(samples: ReadonlyMap<string, readonly RoundSample[]>, a: string, b: string): number {
  return perRoundRatio(samples.get(a)!, samples.get(b)!);
}

export function atLeast(name: string, measured: number, wanted: number, caveat?: string): Check {
  return { name, measured, wanted, unit: "×", relation: "≥", pass: measured >= wanted, caveat };
}

export function atMost(name: string, measured: number, wanted: number, caveat?: string): Check {
  return { name, measured, wanted, unit: "", relation: "≤", pass: measured <= wanted, caveat };
}

export function exactly(name: string, measured: number, wanted: number, caveat?: string): Check {
  return { name, measured, wanted, unit: "", relation: "=", pass: measured === wanted, caveat };
}

/** Why a comparison of these rows cannot be trusted: error answers, or requests the limiter never counted. */
export function caveatFor(rows: readonly Row[]): string | undefined {
  const notes = rows.flatMap((row) => [
    ...(row.failures > 0 ? [`${row.target.label}: ${row.failures} error answers`] : []),
    ...(row.failOpen > 0 ? [`${row.target.label}: ${row.failOpen} requests passed uncounted (limiter failed open)`] : []),
  ]);
  return notes.length > 0 ? notes.join("; ") : undefined;
}
