/**
 * `npm run bench:flood-cpu`: what one rejected request costs inside the isolate, without HTTP and without the
 * load generator. The gateway (bench/gateway/flood-loop-entry.ts around src/worker.ts) runs BENCH_LOOP_N (50,000)
 * requests of a flood through its own fetch handler in a loop; the same loop that only builds a fixed 429, or a
 * 429 of the gateway's own size and shape, is the baseline. workerd's CPU time is read from /proc before and
 * after each loop; modes are alternated for BENCH_ROUNDS (5) rounds and medians reported. Requests on a path
 * that reaches the limiter object or the upstream are not measured here: a loop runs in one request's context.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { benchPolicyFiles, PATHS } from "./gateway-files.ts";
import { median } from "../shared/stats.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const n = fromEnv("BENCH_LOOP_N", 50_000, { min: 1 });
const rounds = fromEnv("BENCH_ROUNDS", 5, { min: 1 });
const MODES = [
  { id: "fixed", label: "fixed 429 only (17-byte text, retry-after)" },
  { id: "envelope", label: "a 429 of the gateway's shape, built whole" },
  { id: "gateway", label: "the gateway's flood path (src/worker.ts)" },
] as const;

const dir = mkdtempSync(join(tmpdir(), "tollgate-flood-cpu-"));
const upstream = await startUpstream();
try {
  const script = await bundleWorker({
    entry: join(ROOT, "bench/gateway/flood-loop-entry.ts"),
    outdir: join(dir, "gateway"),
    policyFiles: benchPolicyFiles(upstream.origin),
  });
  const host = await hostWorker({ name: "tollgate", wranglerConfig: join(ROOT, "wrangler.toml"), script, persistDir: join(dir, "state") });
  try {
    const target = encodeURIComponent(`http://127.0.0.1${PATHS.flood}`);
    const loop = async (mode: string, count: number) => {
      const response = await fetch(`${host.url}/__loop?n=${count}&mode=${mode}&target=${target}`);
      if (!response.ok) throw new Error(`/__loop answered ${response.status}: ${await response.text()}`);
      await response.text();
    };
    for (const mode of MODES) await loop(mode.id, 5_000); // warm-up; the flood's bucket is limited from here on
    const samples = new Map<string, number[]>(MODES.map((mode) => [mode.id, []]));
    for (let round = 0; round < rounds; round++) {
      for (const mode of MODES) {
        const before = host.cpuSeconds();
        await loop(mode.id, n);
        const after = host.cpuSeconds();
        if (before === undefined || after === undefined) throw new Error("workerd's CPU time cannot be read (/proc)");
        samples.get(mode.id)!.push(((after - before) * 1e6) / n);
      }
      process.stderr.write(`· round ${round + 1}/${rounds}\n`);
    }
    const of = (id: string) => median(samples.get(id)!);
    const lines = [
      `In-isolate CPU per request, ${n} requests a loop, median of ${rounds} alternated rounds:`,
      ...MODES.map((mode) => `${of(mode.id).toFixed(1).padStart(7)} µs  ${mode.label}`),
      "",
      `the gateway's work besides building its 429: ${(of("gateway") - of("envelope")).toFixed(1)} µs a rejected request`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await host.close();
  }
} finally {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
}
