/** Settings of a bench run: defaults from issue 2, each one overridable from the environment. */

export interface BenchConfig {
  /** autocannon connections per run. */
  readonly connections: number;
  /** Seconds per autocannon run. */
  readonly durationSeconds: number;
  /** Rounds of A B C … runs; medians are taken over them. */
  readonly rounds: number;
  /** Seconds of discarded load per target before the first round. */
  readonly warmupSeconds: number;
  /** Seconds of the end-to-end accuracy run (0 skips it). */
  readonly accuracySeconds: number;
  /** Seconds of the end-to-end accuracy run of costs, several windows and settles (0 skips it). */
  readonly costAccuracySeconds: number;
  /** Seed of the accuracy schedules. */
  readonly seed: number;
  /** Target ids to measure (BENCH_ONLY, comma-separated; bare always runs), or undefined for all. */
  readonly only?: readonly string[];
}

export function fromEnv(name: string, fallback: number, { min = 0, integer = true } = {}): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be ${integer ? "an integer" : "a number"} ≥ ${min} (got '${text}')`);
  }
  return value;
}

export function readConfig(): BenchConfig {
  return {
    connections: fromEnv("BENCH_CONNECTIONS", 50, { min: 1 }),
    durationSeconds: fromEnv("BENCH_DURATION", 5, { min: 1 }),
    // Even: every target runs as often early in its round as late (see bench/shared/throughput.ts).
    rounds: fromEnv("BENCH_ROUNDS", 4, { min: 1 }),
    warmupSeconds: fromEnv("BENCH_WARMUP", 1),
    accuracySeconds: fromEnv("BENCH_ACCURACY_SECONDS", 100),
    costAccuracySeconds: fromEnv("BENCH_COST_ACCURACY_SECONDS", 60),
    seed: fromEnv("BENCH_SEED", 20_260_426),
    only: process.env.BENCH_ONLY
      ? process.env.BENCH_ONLY.split(",")
          .map((id) => id.trim())
          .filter(Boolean)
      : undefined,
  };
}

export const ENV_HELP =
  "BENCH_CONNECTIONS (50), BENCH_DURATION s (5), BENCH_ROUNDS (4), BENCH_WARMUP s (1), BENCH_ACCURACY_SECONDS (100; 0 skips), BENCH_COST_ACCURACY_SECONDS (60; 0 skips), BENCH_SEED, BENCH_ONLY (ids, e.g. flood,fixed-429)";
