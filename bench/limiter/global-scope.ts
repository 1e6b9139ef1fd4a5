/**
 * `npm run bench:global`: a `scope: global` bucket whose objects are far away (every call to them delayed
 * BENCH_GLOBAL_DELAY_MS each way, 50 by default, by a wrapper of the binding in bench/limiter/global-scope-worker.ts), against
 * a bare route and the seed's per-ingress bucket, in one workerd: allowed-path throughput and p99 once leasing; then
 * over-admission, which must be 0: a load run past a global capacity, and the bursty accuracy run checked against
 * the exact sliding log (bench/limiter/oracle.ts). Progress goes to stderr, results to stdout.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runAccuracy } from "./accuracy.ts";
import { bundleWorker } from "../shared/bundle.ts";
import { ENV_HELP, fromEnv, readConfig } from "../shared/config.ts";
import { ACCURACY_BUCKET_HEADER } from "../gateway/gateway-files.ts";
import { runLoad } from "../shared/load.ts";
import { checkLines, textTable } from "../shared/report.ts";
import { FAIL_OPEN_MARKER } from "../gateway/stack.ts";
import { atLeast, atMost, caveatFor, exactly, summarize } from "../shared/summary.ts";
import { measureAlternating, type Target } from "../shared/throughput.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const progress = (message: string) => process.stderr.write(`· ${message}\n`);

/** Capacities: one no run reaches (the allowed path), one a load run passes, and the accuracy run's. */
const ALLOWED = 2_000_000_000;
const PAST_CAPACITY = 300;
const ACCURACY = { capacity: 100, rate: "60s", windowMs: 60_000 };

function limitPolicy(name: string, capacity: number, scope: "ingress" | "global", bucketKey: string): string {
  return [
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config:",
    `          name: ${name}`,
    `          capacity: ${capacity}`,
    "          rate: 60s",
    `          scope: ${scope}`,
    `          bucket_key: [${JSON.stringify(bucketKey)}]`,
    "",
  ].join("\n");
}

function policyFiles(origin: string): Record<string, string> {
  const route = (id: string, match: string, policy?: string) =>
    [`      - id: ${id}`, `        match: ${match}`, `        upstream: ${origin}`, ...(policy ? [`        traffic_policy: ${policy}`] : [])].join("\n");
  return {
    "policies/gateway.yaml": [
      "edges:",
      "  - id: edghts_bench",
      '    hostnames: ["127.0.0.1", "localhost"]',
      "    routes:",
      route("edghtsrt_bare", "/bare"),
      route("edghtsrt_ingress", "/ingress", "ingress.yaml"),
      route("edghtsrt_global", "/global", "global.yaml"),
      route("edghtsrt_past", "/past", "past.yaml"),
      route("edghtsrt_accuracy", "/accuracy", "accuracy.yaml"),
      "",
    ].join("\n"),
    "policies/ingress.yaml": limitPolicy("allowed-ingress", ALLOWED, "ingress", "conn.client_ip"),
    "policies/global.yaml": limitPolicy("allowed-global", ALLOWED, "global", "conn.client_ip"),
    // Keyed by the path (a CEL key): each load run past capacity names a fresh bucket.
    "policies/past.yaml": limitPolicy("past-global", PAST_CAPACITY, "global", "req.url.path"),
    "policies/accuracy.yaml": limitPolicy("accuracy-global", ACCURACY.capacity, "global", `req.headers['${ACCURACY_BUCKET_HEADER}']`),
  };
}

const config = readConfig();
const delayMs = fromEnv("BENCH_GLOBAL_DELAY_MS", 50);
const accuracySeconds = fromEnv("BENCH_ACCURACY_SECONDS", 30);
const loadBefore = loadavg()[0]!;
progress(
  `settings: ${config.connections} connections × ${config.durationSeconds} s, ${config.rounds} rounds, object delay ${delayMs} ms each way (${ENV_HELP}, BENCH_GLOBAL_DELAY_MS)`,
);

const dir = mkdtempSync(join(tmpdir(), "tollgate-bench-global-"));
const upstream = await startUpstream();
const gateway = await hostWorker({
  name: "tollgate-global",
  wranglerConfig: join(ROOT, "wrangler.toml"),
  script: await bundleWorker({
    entry: join(ROOT, "bench/limiter/global-scope-worker.ts"),
    outdir: join(dir, "gateway"),
    policyFiles: policyFiles(upstream.origin),
  }),
  vars: { TOLLGATE_DEBUG_STATS: "1", BENCH_GLOBAL_DELAY_MS: String(delayMs) },
  persistDir: join(dir, "state"),
  countLinesContaining: [FAIL_OPEN_MARKER],
});
try {
  const objectCalls = async () => ((await (await fetch(`${gateway.url}/__tollgate/stats`)).json()) as { objectCalls: number }).objectCalls;
  const counted = { objectCalls, cpuSeconds: gateway.cpuSeconds, failOpen: () => gateway.linesContaining(FAIL_OPEN_MARKER) };
  const targets: Target[] = [
    { id: "bare", label: "bare pass-through", url: `${gateway.url}/bare`, kind: "bare", cpuSeconds: gateway.cpuSeconds },
    { id: "ingress", label: "allowed path, scope: ingress (near object)", url: `${gateway.url}/ingress`, kind: "allowed", ...counted },
    { id: "global", label: `allowed path, scope: global (object ${delayMs} ms away)`, url: `${gateway.url}/global`, kind: "allowed", ...counted },
  ];
  const samples = await measureAlternating(targets, {
    rounds: config.rounds,
    warmupSeconds: config.warmupSeconds,
    load: { connections: config.connections, durationSeconds: config.durationSeconds },
    onProgress: progress,
  });
  const rows = summarize(targets, samples, "bare");
  const row = (id: string) => rows.find((r) => r.target.id === id)!;

  progress(`past capacity: ${config.durationSeconds} s of load on one global bucket of ${PAST_CAPACITY} per 60 s`);
  const past = await runLoad(`${gateway.url}/past/run-${Date.now()}`, { connections: config.connections, durationSeconds: config.durationSeconds });
  const pastAdmitted = past.requests - past.limited - past.failures;
  // The run is shorter than the window, so an exact sliding log admits min(capacity, answered) of it.
  const pastExact = Math.min(PAST_CAPACITY, past.requests - past.failures);

  let accuracy: Awaited<ReturnType<typeof runAccuracy>> | undefined;
  if (accuracySeconds > 0) {
    progress(`accuracy: ${accuracySeconds} s of bursts on one global bucket, against the exact sliding log`);
    accuracy = await runAccuracy({
      url: `${gateway.url}/accuracy`,
      headers: { [ACCURACY_BUCKET_HEADER]: `run-${Date.now()}` },
      capacity: ACCURACY.capacity,
      windowMs: ACCURACY.windowMs,
      durationMs: accuracySeconds * 1000,
      seed: config.seed,
    });
  }

  const checks = [
    atMost("global p99 − bare p99 (ms)", row("global").p99 - row("bare").p99, 10, caveatFor([row("bare"), row("global")])),
    atLeast("global allowed path vs bare", row("global").ratioToBare, 0.9, caveatFor([row("bare"), row("global")])),
    exactly(
      "over-admitted past a global capacity",
      Math.max(0, pastAdmitted - PAST_CAPACITY),
      0,
      past.failures > 0 ? `${past.failures} failed` : past.requests <= PAST_CAPACITY ? "the run never reached the capacity" : undefined,
    ),
    ...(accuracy
      ? [
          exactly(
            "over-admitted, bursts against the exact sliding log",
            accuracy.overAdmitted,
            0,
            accuracy.failures > 0 ? `${accuracy.failures} failed` : undefined,
          ),
        ]
      : []),
  ];
  const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, load ${loadBefore.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}, Node ${process.version}`;
  const out = [
    "",
    `Tollgate global scope — ${machine}`,
    `${config.connections} connections × ${config.durationSeconds} s per run, ${config.rounds} rounds alternated; global objects ${delayMs} ms away each way.`,
    "",
    textTable(rows),
    "",
    checkLines(checks),
    "",
    `past capacity: ${past.requests} answered, admitted ${pastAdmitted} of ${PAST_CAPACITY} (exact log: ${pastExact}), ${past.limited} × 429, ${past.failures} failed`,
    accuracy
      ? `accuracy: ${accuracy.requests} requests in ${(accuracy.elapsedMs / 1000).toFixed(0)} s; admitted ${accuracy.admitted}, exact sliding log ${accuracy.oracleAdmitted}; ` +
        `over-admitted ${accuracy.overAdmitted} (busiest window ${accuracy.busiestWindow}); under-admission ${accuracy.underAdmissionPercent.toFixed(2)} %; failed ${accuracy.failures}`
      : "accuracy: skipped (BENCH_ACCURACY_SECONDS=0)",
    `uncounted (fail-open) in all: ${gateway.linesContaining(FAIL_OPEN_MARKER)}`,
  ];
  process.stdout.write(`${out.join("\n")}\n`);
} finally {
  await gateway.close().catch(() => {});
  await upstream.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
