/**
 * The throughput part: every target loaded in turn for several rounds, so that machine noise spreads over all
 * of them alike; one warm-up pass first, discarded. Rounds run the targets forwards and backwards in turn
 * (A B C, C B A, …): workerd under Miniflare grows its memory by a few KB a request whatever the Worker does, and
 * its latency tail grows with it (a bare route's p99 rose from 67 to 188 ms over ten 5 s runs), so a target
 * always run after another would always meet an older process.
 */

import { runLoad, type LoadOptions, type LoadResult } from "./load.ts";

export type TargetKind = "bare" | "allowed" | "flood";

export interface Target {
  readonly id: string;
  readonly label: string;
  readonly url: string;
  readonly kind: TargetKind;
  /** Reads the isolate's counter of rate-limiter object calls, when the target exposes one. */
  readonly objectCalls?: () => Promise<number>;
  /** CPU seconds used so far by the process serving the target. */
  readonly cpuSeconds?: () => number | undefined;
  /** Requests so far that proceeded uncounted because the limiter failed (fail-open). */
  readonly failOpen?: () => number;
}

export interface RoundSample {
  readonly round: number;
  readonly result: LoadResult;
  /** Object calls made during this run (counter delta), when the target exposes the counter. */
  readonly objectCalls?: number;
  /** CPU seconds the serving process used during this run. */
  readonly cpuSeconds?: number;
  /** Requests that failed open during this run. */
  readonly failOpen: number;
}

export interface MeasureOptions {
  readonly rounds: number;
  readonly warmupSeconds: number;
  readonly load: LoadOptions;
  readonly onProgress?: (message: string) => void;
}

async function sample(target: Target, round: number, load: LoadOptions): Promise<RoundSample> {
  const before = await target.objectCalls?.();
  const cpuBefore = target.cpuSeconds?.();
  const failOpenBefore = target.failOpen?.() ?? 0;
  const result = await runLoad(target.url, load);
  const cpuAfter = target.cpuSeconds?.();
  const after = await target.objectCalls?.();
  const failOpen = (target.failOpen?.() ?? 0) - failOpenBefore;
  return {
    failOpen,
    round,
    result,
    objectCalls: before !== undefined && after !== undefined ? after - before : undefined,
    cpuSeconds: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined,
  };
}

/** Samples of each target (by id), one per round. */
export async function measureAlternating(targets: readonly Target[], options: MeasureOptions): Promise<Map<string, RoundSample[]>> {
  const log = options.onProgress ?? (() => {});
  if (options.warmupSeconds > 0) {
    for (const target of targets) {
      log(`warm-up ${target.label}`);
      await runLoad(target.url, { ...options.load, durationSeconds: options.warmupSeconds });
    }
  }
  const samples = new Map<string, RoundSample[]>(targets.map((target) => [target.id, []]));
  for (let round = 1; round <= options.rounds; round++) {
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
      const taken = await sample(target, round, options.load);
      samples.get(target.id)!.push(taken);
      const { requestsPerSecond, p50, p99, limited, requests } = taken.result;
      log(
        `round ${round}/${options.rounds} ${target.label}: ${requestsPerSecond.toFixed(0)} req/s, p50 ${p50} ms, p99 ${p99} ms` +
          (target.kind === "flood" ? `, ${limited}/${requests} 429` : ""),
      );
    }
  }
  return samples;
}
