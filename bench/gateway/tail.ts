/**
 * `npm run bench:tail`: the allowed path's tail under an open-loop load at a fixed rate (bench/shared/open-loop.ts),
 * the shape a peer benchmark kept outside the project read (one client key, capacity 1,000,000 per 60 s, objects
 * persisted, one workerd): requests arrive evenly whatever the server does, so a stall shows in the latency of every
 * request due during it instead of slowing the load down, as a closed loop's would. The bare route and the
 * rate-limited one alternate in rounds (ABBA), and each round prints the p99 difference of the pair: the spread of
 * those differences says how small a difference this machine can resolve. Rate: BENCH_TAIL_RATE (500 a second).
 */

import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { type OpenLoopResult, runOpenLoop } from "../shared/open-loop.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const RATE = fromEnv("BENCH_TAIL_RATE", 500, { min: 1 });
const SECONDS = fromEnv("BENCH_DURATION", 10, { min: 1 });
const ROUNDS = fromEnv("BENCH_ROUNDS", 4, { min: 1 });
const CONNECTIONS = fromEnv("BENCH_CONNECTIONS", 50, { min: 1 });
const CAPACITY = 1_000_000;

const upstream = await startUpstream();
const dir = mkdtempSync(join(tmpdir(), "tollgate-tail-"));
const route = (id: string, policy?: string) =>
  [
    `      - id: edghtsrt_${id}`,
    `        match: /${id}`,
    `        upstream: ${upstream.origin}`,
    ...(policy ? [`        traffic_policy: ${policy}`] : []),
  ].join("\n");
const files = {
  "policies/gateway.yaml": [
    "edges:",
    "  - id: edghts_tail",
    '    hostnames: ["127.0.0.1", "localhost"]',
    "    routes:",
    route("bare"),
    route("allowed", "tail.yaml"),
    "",
  ].join("\n"),
  "policies/tail.yaml": [
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config:",
    "          name: tail",
    `          capacity: ${CAPACITY}`,
    "          rate: 60s",
    '          bucket_key: ["conn.client_ip"]',
    "",
  ].join("\n"),
};
const script = await bundleWorker({ entry: join(ROOT, "src/worker.ts"), outdir: join(dir, "gw"), policyFiles: files });
const host = await hostWorker({ name: "tollgate", wranglerConfig: join(ROOT, "wrangler.toml"), script, persistDir: join(dir, "state") });

const load = (path: string, seconds: number) => runOpenLoop(`${host.url}${path}`, { rate: RATE, durationSeconds: seconds, connections: CONNECTIONS });
const line = (label: string, r: OpenLoopResult) =>
  `${label.padEnd(8)} p50 ${r.p50} ms, p99 ${r.p99} ms, p99.9 ${r.p999} ms, max ${r.max} ms, ${r.failures} failed of ${r.requests}`;

try {
  process.stdout.write(
    `Allowed path's tail: open loop at ${RATE} requests a second, ${SECONDS} s a run, ${CONNECTIONS} connections at most, one client, capacity ${CAPACITY.toLocaleString("en")} per 60 s.\n`,
  );
  for (const path of ["/bare", "/allowed"]) await load(path, 2);
  const differences: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // ABBA: neither route always runs first in a round.
    const order = round % 2 === 0 ? ["/bare", "/allowed"] : ["/allowed", "/bare"];
    const results = new Map<string, OpenLoopResult>();
    for (const path of order) results.set(path, await load(path, SECONDS));
    const bare = results.get("/bare")!;
    const allowed = results.get("/allowed")!;
    differences.push(allowed.p99 - bare.p99);
    process.stdout.write(
      `round ${round + 1} (load ${loadavg()[0]!.toFixed(2)})\n  ${line("bare", bare)}\n  ${line("allowed", allowed)}\n  p99 allowed − bare: ${(allowed.p99 - bare.p99).toFixed(1)} ms\n`,
    );
  }
  const sorted = [...differences].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  process.stdout.write(
    `\np99 allowed − bare over ${ROUNDS} rounds: median ${median.toFixed(1)} ms, from ${sorted[0]!.toFixed(1)} to ${sorted.at(-1)!.toFixed(1)} ms (a difference smaller than that spread is not resolved on this machine)\n`,
  );
} finally {
  await host.close();
  await upstream.close();
}
