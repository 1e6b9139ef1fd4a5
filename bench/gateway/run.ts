/**
 * `npm run bench`: Tollgate's rate limiting measured side by side with a bare pass-through, a Worker that
 * only answers a fixed 429 (the ceiling of any flood path), the Workers rate-limit binding (Miniflare's local
 * simulation) and hono-rate-limiter + its Durable Object store, all in one run; then the accuracy against an exact
 * sliding log. Progress goes to stderr, results to stdout. See docs/benchmark.md for how to read them.
 */

import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { runAccuracy } from "../limiter/accuracy.ts";
import { costAccuracyLine, runCostAccuracy } from "../limiter/accuracy-costs.ts";
import { measureAlgorithmAccuracy } from "../limiter/algorithm-accuracy.ts";
import { ENV_HELP, readConfig } from "../shared/config.ts";
import { ACCURACY_BUCKET_HEADER, LIMITS, PATHS } from "./gateway-files.ts";
import { accuracyLines, checkLines, markdownTable, textTable } from "../shared/report.ts";
import { FAIL_OPEN_MARKER, startStack } from "./stack.ts";
import { atLeast, atMost, caveatFor, exactly, roundRatio, summarize } from "../shared/summary.ts";
import { measureAlternating, type Target } from "../shared/throughput.ts";

const progress = (message: string) => process.stderr.write(`· ${message}\n`);

async function counter(url: string): Promise<number> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return ((await response.json()) as { objectCalls: number }).objectCalls;
}

const config = readConfig();
const started = performance.now();
const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, load ${loadavg()[0]!.toFixed(2)}, Node ${process.version}`;
progress(`settings: ${config.connections} connections × ${config.durationSeconds} s, ${config.rounds} rounds (override: ${ENV_HELP})`);

const stack = await startStack();
progress(`upstream ${stack.origin}, gateway ${stack.gateway.url}, peer ${stack.peer.url}, binding ${stack.bindingPeer.url}, fixed 429 ${stack.fixed429.url}`);
try {
  const gatewayCalls = () => counter(`${stack.gateway.url}/__tollgate/stats`);
  const peerCalls = () => counter(`${stack.peer.url}/__peer/stats`);
  const failOpen = () => stack.gateway.linesContaining(FAIL_OPEN_MARKER);
  const gw = { objectCalls: gatewayCalls, cpuSeconds: stack.gateway.cpuSeconds, failOpen };
  const peer = { objectCalls: peerCalls, cpuSeconds: stack.peer.cpuSeconds };
  const binding = { cpuSeconds: stack.bindingPeer.cpuSeconds };
  const allTargets: Target[] = [
    { id: "bare", label: "bare pass-through", url: stack.gateway.url + PATHS.bare, kind: "bare", cpuSeconds: stack.gateway.cpuSeconds },
    { id: "allowed", label: "rate-limit, allowed path", url: stack.gateway.url + PATHS.limited, kind: "allowed", ...gw },
    { id: "rollout", label: "allowed path, enforce: false + RateLimit headers", url: stack.gateway.url + PATHS.rollout, kind: "allowed", ...gw },
    { id: "flood", label: "rate-limit, flood", url: stack.gateway.url + PATHS.flood, kind: "flood", ...gw },
    { id: "peer-allowed", label: "peer: hono-rate-limiter + DO, allowed", url: `${stack.peer.url}/allowed`, kind: "allowed", ...peer },
    { id: "peer-flood", label: "peer: hono-rate-limiter + DO, flood", url: `${stack.peer.url}/flood`, kind: "flood", ...peer },
    { id: "binding-allowed", label: "peer: Workers ratelimit binding, allowed", url: `${stack.bindingPeer.url}/allowed`, kind: "allowed", ...binding },
    { id: "binding-flood", label: "peer: Workers ratelimit binding, flood", url: `${stack.bindingPeer.url}/flood`, kind: "flood", ...binding },
    { id: "fixed-429", label: "fixed 429, nothing else (flood ceiling)", url: `${stack.fixed429.url}/`, kind: "flood", cpuSeconds: stack.fixed429.cpuSeconds },
  ];
  // BENCH_ONLY narrows a run to some targets while iterating (bare always stays: ratios are to it).
  const targets = config.only ? allTargets.filter((t) => t.id === "bare" || config.only!.includes(t.id)) : allTargets;

  const samples = await measureAlternating(targets, {
    rounds: config.rounds,
    warmupSeconds: config.warmupSeconds,
    load: { connections: config.connections, durationSeconds: config.durationSeconds },
    onProgress: progress,
  });
  const rows = summarize(targets, samples, "bare");

  progress("accuracy: pure algorithm over simulated time");
  const algorithm = measureAlgorithmAccuracy(config.seed);
  let accuracy: Awaited<ReturnType<typeof runAccuracy>> | undefined;
  const failOpenBeforeAccuracy = failOpen();
  if (config.accuracySeconds > 0) {
    progress(`accuracy: end to end, ${config.accuracySeconds} s of bursts on one bucket`);
    accuracy = await runAccuracy({
      url: stack.gateway.url + PATHS.accuracy,
      headers: { [ACCURACY_BUCKET_HEADER]: `run-${Date.now()}` },
      capacity: LIMITS.accuracy.capacity,
      windowMs: LIMITS.accuracy.windowMs,
      durationMs: config.accuracySeconds * 1000,
      seed: config.seed,
    });
  }

  let costAccuracy: Awaited<ReturnType<typeof runCostAccuracy>> | undefined;
  const failOpenBeforeCostAccuracy = failOpen();
  if (config.costAccuracySeconds > 0) {
    progress(`accuracy: end to end, ${config.costAccuracySeconds} s of bursts with costs, two windows and settles on one bucket`);
    costAccuracy = await runCostAccuracy({
      url: stack.gateway.url + PATHS.costAccuracy,
      headers: { [ACCURACY_BUCKET_HEADER]: `costs-${Date.now()}` },
      durationMs: config.costAccuracySeconds * 1000,
      seed: config.seed,
    });
  }

  const has = (...ids: string[]) => ids.every((id) => targets.some((t) => t.id === id));
  const row = (id: string) => rows.find((r) => r.target.id === id)!;
  const caveat = (...ids: string[]) => caveatFor(ids.map(row));
  const ratioCheck = (name: string, a: string, b: string, wanted: number) =>
    has(a, b) ? [atLeast(name, b === "bare" ? row(a).ratioToBare : roundRatio(samples, a, b), wanted, caveat(a, b))] : [];
  const checks = [
    ...ratioCheck("allowed path vs bare", "allowed", "bare", 0.95),
    ...(has("allowed") ? [atMost("allowed path p99 − bare p99 (ms)", row("allowed").p99 - row("bare").p99, 5, caveat("bare", "allowed"))] : []),
    // Shadow mode and RateLimit headers may cost at most 5 % of the allowed path's throughput.
    ...ratioCheck("allowed path with enforce: false + RateLimit headers vs allowed path", "rollout", "allowed", 0.95),
    ...ratioCheck("flood vs bare", "flood", "bare", 1.0),
    ...ratioCheck("flood vs binding peer flood", "flood", "binding-flood", 1.0),
    ...ratioCheck("flood vs fixed-429 ceiling", "flood", "fixed-429", 0.8),
    ...(has("flood") && row("flood").objectCallsPer429 !== undefined ? [atMost("object calls per 429", row("flood").objectCallsPer429!, 0.01)] : []),
    ...ratioCheck("allowed path vs peer allowed path", "allowed", "peer-allowed", 1.5),
    ...ratioCheck("flood vs peer flood", "flood", "peer-flood", 1.5),
    ...(accuracy
      ? [
          exactly(
            "over-admitted, end to end",
            accuracy.overAdmitted,
            0,
            accuracy.failures > 0 ? `${accuracy.failures} requests got no 200/429 answer; an admission may hide among them` : undefined,
          ),
          atMost("under-admission, end to end (%)", accuracy.underAdmissionPercent, 2),
        ]
      : []),
    ...(costAccuracy
      ? [
          exactly(
            "over-admitted, costs + several windows + settles, end to end",
            costAccuracy.overAdmitted,
            0,
            costAccuracy.failures > 0 ? `${costAccuracy.failures} requests got no 200/429 answer; an admission may hide among them` : undefined,
          ),
        ]
      : []),
    exactly("over-admitted, algorithm over simulated time", algorithm.overAdmitted, 0),
  ];

  const failures = rows.filter((r) => r.failures > 0 || r.failOpen > 0);
  const out = [
    "",
    `Tollgate benchmark — ${machine}`,
    `${config.connections} connections × ${config.durationSeconds} s per run, targets alternated for ${config.rounds} rounds; ` +
      "req/s and latencies are medians over rounds; × bare is the median of per-round ratios.",
    "",
    textTable(rows),
    "",
    checkLines(checks),
    "",
    "Accuracy",
    accuracyLines(accuracy, algorithm, LIMITS.accuracy.capacity, LIMITS.accuracy.rate, failOpenBeforeCostAccuracy - failOpenBeforeAccuracy),
    costAccuracyLine(costAccuracy, failOpen() - failOpenBeforeCostAccuracy),
    ...(failures.length > 0
      ? ["", `WARNING: errors or uncounted requests: ${failures.map((r) => `${r.target.label} ${r.failures} errors, ${r.failOpen} uncounted`).join("; ")}`]
      : []),
    "",
    "Markdown (for the README):",
    "",
    markdownTable(rows),
    "",
    `Bench took ${((performance.now() - started) / 1000).toFixed(0)} s.`,
  ];
  process.stdout.write(`${out.join("\n")}\n`);
  if (failures.length > 0) {
    process.stderr.write(
      `gateway output:\n${stack.gateway.recentOutput()}\npeer output:\n${stack.peer.recentOutput()}\nbinding peer output:\n${stack.bindingPeer.recentOutput()}\n`,
    );
  }
} finally {
  await stack.close();
}
