/**
 * The end-to-end accuracy run of the new limit forms: the accuracy run's bursty schedule (bench/limiter/accuracy.ts) on
 * one bucket of the real Worker whose rate-limit charges a cost per request (random 0–5, from a header), decides
 * two windows all or nothing, and settles each admitted request's cost from its response (random 0–8, or
 * nothing: lost settles keep the estimate). Compared with the exact weighted log (bench/limiter/oracle.ts).
 */

import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { type Burst, burstySchedule } from "./accuracy.ts";
import { type ObservedWeightedAdmission, overAdmittedWeighted, type WeightedWindow, weightedLogRefusals } from "./oracle.ts";
import { seededRandom } from "../shared/stats.ts";

/** Request headers the route's policy reads: the estimated cost, and the cost its settle reports. */
export const COST_HEADER = "x-bench-cost";
export const SETTLE_HEADER = "x-bench-settle";

/**
 * The route's windows: the schedule offers about 2,300 of cost a minute, in bursts of up to 60 requests, so the
 * minute refuses most of the time and the 10 s window cuts the large bursts.
 */
export const COST_WINDOWS: readonly (WeightedWindow & { readonly rate: string })[] = [
  { capacity: 150, windowMs: 10_000, rate: "10s" },
  { capacity: 500, windowMs: 60_000, rate: "60s" },
];

/** The rate-limit policy of the route (`bucketKey`: the CEL element naming a fresh bucket per run). */
export function costAccuracyPolicy(name: string, bucketKey: string): string {
  return [
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config:",
    `          name: ${name}`,
    `          bucket_key: [${JSON.stringify(bucketKey)}]`,
    `          cost: "int(getReqHeader('${COST_HEADER}')[0])"`,
    // The response reports what the request cost; the bench chooses it in the request (read in the response phase).
    `          settle_cost: "res.status_code == 200 ? int(getReqHeader('${SETTLE_HEADER}')[0]) : 0"`,
    "          windows:",
    ...COST_WINDOWS.map((window) => `            - { capacity: ${window.capacity}, rate: ${window.rate} }`),
    "",
  ].join("\n");
}

interface Planned {
  readonly cost: number;
  /** Undefined: the request sends no settle header, so its settle fails and the estimate stays (a lost settle). */
  readonly settled?: number;
}

/** The cost and settle of each request in order: 5 % cost 0, else 1–5; 10 % lost settles, else 0–8. */
function plannedCosts(seed: number): () => Planned {
  const random = seededRandom(seed ^ 0x5e771e);
  return () => {
    const cost = random() < 0.05 ? 0 : 1 + Math.floor(random() * 5);
    return random() < 0.1 ? { cost } : { cost, settled: Math.floor(random() * 9) };
  };
}

interface Observation extends ObservedWeightedAdmission {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly error?: string;
}

export interface CostAccuracyOptions {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly durationMs: number;
  readonly seed: number;
}

export interface CostAccuracyReport {
  readonly requests: number;
  readonly admitted: number;
  readonly limited: number;
  readonly failures: number;
  readonly failureSamples: readonly string[];
  /** Estimated cost admitted, and what the admitted requests' responses settled (lost settles at their estimate). */
  readonly admittedCost: number;
  readonly settledCost: number;
  readonly settles: number;
  readonly lostSettles: number;
  /** Admissions of the exact weighted log fed the same requests at their send times, settles at their answers. */
  readonly oracleAdmitted: number;
  readonly oracleAdmittedCost: number;
  /** Admissions that certainly took a window past its capacity (must be 0). */
  readonly overAdmitted: number;
  /** Refusals of the exact weighted log by the window without room (a request may lack room in both). */
  readonly oracleRefusedBy: Readonly<Record<string, number>>;
  readonly underAdmissionPercent: number;
  readonly limitedWithoutRetryAfter: number;
  readonly elapsedMs: number;
}

async function send(options: CostAccuracyOptions, planned: Planned): Promise<Observation> {
  const headers: Record<string, string> = { ...options.headers, [COST_HEADER]: String(planned.cost) };
  if (planned.settled !== undefined) headers[SETTLE_HEADER] = String(planned.settled);
  const sent = performance.now();
  try {
    const response = await fetch(options.url, { headers });
    const answered = performance.now();
    await response.arrayBuffer();
    return { sent, answered, status: response.status, retryAfter: response.headers.get("retry-after"), ...planned };
  } catch (error) {
    return { sent, answered: performance.now(), status: 0, retryAfter: null, error: (error as Error).message, ...planned };
  }
}

async function runBurst(burst: Burst, options: CostAccuracyOptions, next: () => Planned, into: Observation[]): Promise<void> {
  let left = burst.requests;
  const worker = async () => {
    while (left > 0) {
      left--;
      into.push(await send(options, next()));
    }
  };
  await Promise.all(Array.from({ length: Math.min(burst.concurrency, burst.requests) }, worker));
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

export async function runCostAccuracy(options: CostAccuracyOptions): Promise<CostAccuracyReport> {
  const next = plannedCosts(options.seed);
  const observations: Observation[] = [];
  const start = performance.now();
  const running: Promise<void>[] = [];
  for (const burst of burstySchedule(options.seed, options.durationMs)) {
    const wait = start + burst.at - performance.now();
    if (wait > 0) await sleep(wait);
    running.push(runBurst(burst, options, next, observations));
  }
  await Promise.all(running);
  const elapsedMs = performance.now() - start;

  observations.sort((a, b) => a.sent - b.sent);
  const answered = observations.filter((o) => o.status === 200 || o.status === 429);
  const admitted = observations.filter((o) => o.status === 200);
  const limited = observations.filter((o) => o.status === 429);
  const failed = observations.filter((o) => o.status !== 200 && o.status !== 429);
  // The exact log settles a request when the gateway answered it (its settle leaves with the answer).
  const refusals = weightedLogRefusals(
    answered.map((o) => ({ at: o.sent, cost: o.cost, settled: o.settled, settledAt: o.answered })),
    COST_WINDOWS,
  );
  const oracle = refusals.map((refused) => refused === undefined);
  const oracleAdmittedCost = sum(answered.filter((_, index) => oracle[index]).map((o) => o.cost));
  const admittedCost = sum(admitted.map((o) => o.cost));
  return {
    requests: observations.length,
    admitted: admitted.length,
    limited: limited.length,
    failures: failed.length,
    failureSamples: failed.slice(0, 3).map((o) => o.error ?? `status ${o.status}`),
    admittedCost,
    settledCost: sum(admitted.map((o) => o.settled ?? o.cost)),
    settles: admitted.filter((o) => o.settled !== undefined).length,
    lostSettles: admitted.filter((o) => o.settled === undefined).length,
    oracleAdmitted: oracle.filter(Boolean).length,
    oracleAdmittedCost,
    overAdmitted: overAdmittedWeighted(admitted, COST_WINDOWS),
    oracleRefusedBy: Object.fromEntries(COST_WINDOWS.map((window, index) => [window.rate, refusals.filter((full) => full?.includes(index)).length])),
    underAdmissionPercent: oracleAdmittedCost === 0 ? 0 : (100 * (oracleAdmittedCost - admittedCost)) / oracleAdmittedCost,
    limitedWithoutRetryAfter: limited.filter((o) => !/^\d+$/.test(o.retryAfter ?? "") || Number(o.retryAfter) < 1).length,
    elapsedMs,
  };
}

/** The run's line in the bench's Accuracy section. */
export function costAccuracyLine(run: CostAccuracyReport | undefined, uncounted: number): string {
  if (!run) return "end to end, costs + several windows + settles: skipped (BENCH_COST_ACCURACY_SECONDS=0)";
  const windows = COST_WINDOWS.map((window) => `${window.capacity} per ${window.rate}`).join(" and ");
  const lacking = Object.entries(run.oracleRefusedBy)
    .map(([rate, count]) => `${count} in the ${rate} window`)
    .join(", ");
  const lines = [
    `end to end, costs + several windows + settles (one bucket, cost 0–5 a request, ${windows} all or nothing, ` +
      `settles 0–8 from the response, 10 % lost): ${run.requests} requests in ${(run.elapsedMs / 1000).toFixed(0)} s; ` +
      `admitted ${run.admitted} (cost ${run.admittedCost}, settled to ${run.settledCost}; ${run.settles} settles sent, ${run.lostSettles} lost), ` +
      `refused ${run.limited}; exact weighted log ${run.oracleAdmitted} (cost ${run.oracleAdmittedCost}; its refusals for lack of room: ${lacking}); ` +
      `over-admitted ${run.overAdmitted}; ` +
      `under-admission ${run.underAdmissionPercent.toFixed(2)} % of cost; 429 without retry-after ${run.limitedWithoutRetryAfter}; ` +
      `failed ${run.failures}; passed uncounted (fail-open) ${uncounted}`,
  ];
  if (run.failures > 0) lines.push(`  failed requests (an admission may hide among them): ${run.failureSamples.join("; ")}`);
  return lines.join("\n");
}
