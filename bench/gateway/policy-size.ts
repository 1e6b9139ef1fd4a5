/**
 * `npm run bench:policy-size`: what the size of a traffic policy costs. In one workerd, routes with 0, 1, 10
 * and 63 entries before a rate limit (entries that do not match or fail on an absent header), loaded in
 * alternated rounds with a bare route of the same Worker; then an isolate's first request with many policy
 * files against one with a single file, each in a freshly started workerd. Ratios to the same run's figures.
 * `measurePolicySize` and `policySizeLines` are exported for other benches (bench:scale).
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { BARE_PATH, ENTRY_COUNTS, entriesPath, entryRouteFiles, EXPRESSION_ERROR_MARKER, manyFiles } from "./policy-size-files.ts";
import { median } from "../shared/stats.ts";
import { measureAlternating, type RoundSample, type Target } from "../shared/throughput.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");

export interface PolicySizeOptions {
  readonly connections: number;
  readonly durationSeconds: number;
  /** Alternated rounds of the entry routes and the bare route; medians are taken over them. */
  readonly rounds: number;
  readonly warmupSeconds: number;
  /** Policy files of the first-request measurement, and how many fresh workerds measure it (each gateway). */
  readonly files: number;
  readonly starts: number;
  readonly onProgress?: (message: string) => void;
}

export interface EntriesPoint {
  /** Entries before the rate limit (0: the rate limit alone). */
  readonly entries: number;
  readonly requestsPerSecond: number;
  readonly p99: number;
  /** Throughput as a share of the bare route's in the same rounds. */
  readonly timesBare: number;
  /** Request time (1 / throughput) relative to the one-entry route's. */
  readonly requestTimeVsOne: number;
  /** workerd's CPU time per request (µs), and as a multiple of the one-entry route's: steadier than throughput on a busy machine. */
  readonly cpuMicrosPerRequest: number;
  readonly cpuVsOne: number;
  /** Lines the Worker wrote about failing expressions, per second of load on this route. */
  readonly errorLinesPerSecond: number;
  /** Responses other than 200, connection errors and timeouts. */
  readonly failures: number;
}

export interface PolicySizeResult {
  readonly bare: { readonly requestsPerSecond: number; readonly p99: number; readonly cpuMicrosPerRequest: number };
  readonly points: readonly EntriesPoint[];
  /** Milliseconds of an isolate's first request (fetch to answer) with `files` policy files, and with one. */
  readonly firstRequest: { readonly files: number; readonly manyMs: number; readonly oneMs: number; readonly secondMs: number };
}

async function timedGet(url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(url);
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  return performance.now() - started;
}

/** Runs the rounds against the entry routes in one workerd. */
async function measureEntries(origin: string, dir: string, options: PolicySizeOptions): Promise<Pick<PolicySizeResult, "bare" | "points">> {
  const script = await bundleWorker({ entry: join(ROOT, "src/worker.ts"), outdir: join(dir, "entries"), policyFiles: entryRouteFiles(origin) });
  const host = await hostWorker({
    name: "tollgate",
    wranglerConfig: join(ROOT, "wrangler.toml"),
    script,
    persistDir: join(dir, "entries-state"),
    countLinesContaining: [EXPRESSION_ERROR_MARKER],
  });
  try {
    const errorLines = () => host.linesContaining(EXPRESSION_ERROR_MARKER);
    const counts = [0, ...ENTRY_COUNTS];
    const targets: Target[] = [
      { id: "bare", label: "bare route", url: host.url + BARE_PATH, kind: "bare", cpuSeconds: host.cpuSeconds },
      ...counts.map((entries) => ({
        id: `entries-${entries}`,
        label: `${entries} entries before a rate limit`,
        url: host.url + entriesPath(entries),
        kind: "allowed" as const,
        cpuSeconds: host.cpuSeconds,
        // The sampler takes this counter's delta over each run: here, lines about failing expressions.
        failOpen: errorLines,
      })),
    ];
    const samples = await measureAlternating(targets, {
      rounds: options.rounds,
      warmupSeconds: options.warmupSeconds,
      load: { connections: options.connections, durationSeconds: options.durationSeconds },
      onProgress: options.onProgress,
    });
    const rps = (id: string) => median(samples.get(id)!.map((sample) => sample.result.requestsPerSecond));
    const p99 = (id: string) => median(samples.get(id)!.map((sample) => sample.result.p99));
    const cpu = (id: string) => median(samples.get(id)!.map((sample) => ((sample.cpuSeconds ?? Number.NaN) * 1e6) / sample.result.requests));
    const bare = rps("bare");
    const one = rps("entries-1");
    const linesPerSecond = (taken: readonly RoundSample[]) => median(taken.map((sample) => sample.failOpen / options.durationSeconds));
    const points = counts.map((entries) => {
      const id = `entries-${entries}`;
      return {
        entries,
        requestsPerSecond: rps(id),
        p99: p99(id),
        timesBare: rps(id) / bare,
        requestTimeVsOne: one / rps(id),
        cpuMicrosPerRequest: cpu(id),
        cpuVsOne: cpu(id) / cpu("entries-1"),
        errorLinesPerSecond: linesPerSecond(samples.get(id)!),
        failures: samples.get(id)!.reduce((sum, sample) => sum + sample.result.failures, 0),
      };
    });
    return { bare: { requestsPerSecond: bare, p99: p99("bare"), cpuMicrosPerRequest: cpu("bare") }, points };
  } finally {
    await host.close();
  }
}

/** An isolate's first request and its second, in a freshly started workerd serving the bundle `script`. */
async function firstRequestOf(script: string, persistDir: string): Promise<{ first: number; second: number }> {
  const host = await hostWorker({ name: "tollgate", wranglerConfig: join(ROOT, "wrangler.toml"), script, persistDir });
  try {
    const first = await timedGet(`${host.url}/r0/`);
    return { first, second: await timedGet(`${host.url}/r0/`) };
  } finally {
    await host.close();
  }
}

export async function measurePolicySize(options: PolicySizeOptions): Promise<PolicySizeResult> {
  const progress = options.onProgress ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), "tollgate-policy-size-"));
  const upstream = await startUpstream();
  try {
    const entries = await measureEntries(upstream.origin, dir, options);
    progress(`first request: ${options.starts} fresh workerds each with ${options.files} policy files and with 1`);
    // Alternated, one start of each at a time, so the two gateways meet the same machine.
    const bundle = (name: string, files: number) =>
      bundleWorker({ entry: join(ROOT, "src/worker.ts"), outdir: join(dir, name), policyFiles: manyFiles(files, upstream.origin) });
    const [manyScript, oneScript] = [await bundle("many", options.files), await bundle("one", 1)];
    const many: number[] = [];
    const one: number[] = [];
    const second: number[] = [];
    for (let start = 0; start < options.starts; start++) {
      const withMany = await firstRequestOf(manyScript, join(dir, `many-state-${start}`));
      const withOne = await firstRequestOf(oneScript, join(dir, `one-state-${start}`));
      many.push(withMany.first);
      second.push(withMany.second);
      one.push(withOne.first);
      progress(
        `start ${start + 1}/${options.starts}: first request ${withMany.first.toFixed(0)} ms with ${options.files} files, ${withOne.first.toFixed(0)} ms with 1`,
      );
    }
    return { ...entries, firstRequest: { files: options.files, manyMs: median(many), oneMs: median(one), secondMs: median(second) } };
  } finally {
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The result as a Markdown table and two lines. */
export function policySizeLines(result: PolicySizeResult): string[] {
  const { bare, points, firstRequest } = result;
  const sixtyThree = points.find((point) => point.entries === 63);
  return [
    `| entries before a rate limit | req/s | × bare | p99 (ms) | request time × 1 entry | workerd CPU µs/request | CPU × 1 entry | failing-expression lines/s | failures |`,
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    `| bare route | ${bare.requestsPerSecond.toFixed(0)} | 1.00 | ${bare.p99.toFixed(0)} | | ${bare.cpuMicrosPerRequest.toFixed(0)} | | | |`,
    ...points.map(
      (point) =>
        `| ${point.entries} | ${point.requestsPerSecond.toFixed(0)} | ${point.timesBare.toFixed(2)} | ${point.p99.toFixed(0)} | ${point.requestTimeVsOne.toFixed(2)} | ${point.cpuMicrosPerRequest.toFixed(0)} | ${point.cpuVsOne.toFixed(2)} | ${point.errorLinesPerSecond.toFixed(1)} | ${point.failures} |`,
    ),
    "",
    sixtyThree
      ? `63 entries cost ${sixtyThree.requestTimeVsOne.toFixed(2)} × one entry's request time and ${sixtyThree.cpuVsOne.toFixed(2)} × its CPU per request (target ≤ 1.5).`
      : "",
    `An isolate's first request: ${firstRequest.manyMs.toFixed(0)} ms with ${firstRequest.files} policy files, ${firstRequest.oneMs.toFixed(0)} ms with 1 (its second request: ${firstRequest.secondMs.toFixed(0)} ms).`,
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const options: PolicySizeOptions = {
    connections: fromEnv("BENCH_CONNECTIONS", 50, { min: 1 }),
    durationSeconds: fromEnv("BENCH_DURATION", 5, { min: 1 }),
    rounds: fromEnv("BENCH_ROUNDS", 4, { min: 1 }),
    warmupSeconds: fromEnv("BENCH_WARMUP", 1),
    files: fromEnv("BENCH_POLICY_FILES", 200, { min: 1 }),
    starts: fromEnv("BENCH_STARTS", 3, { min: 1 }),
    onProgress: (message) => process.stderr.write(`· ${message}\n`),
  };
  const result = await measurePolicySize(options);
  console.log(
    `policy size bench: ${options.rounds} alternated rounds of ${options.durationSeconds} s × ${options.connections} connections; first request over ${options.starts} starts`,
  );
  for (const line of policySizeLines(result)) console.log(line);
}
