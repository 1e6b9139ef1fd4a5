/**
 * `npm run bench:hostile`: what a hostile policy costs everyone else. In one workerd, a victim client loads a
 * route without a policy while a second client sends 16 KB paths to (a) a route without a policy, or (b) a
 * route carrying the review's hostile policy (`req.url.path.split('').map(c, c).size() > 0`, repeated, plus
 * 41 `log` actions interpolating the path). Printed as the victim's throughput and p99 relative to the
 * victim alone, measured in alternated rounds in the same run; the hostile route's own rate too.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { localEdgeYaml } from "../shared/local-edge.ts";
import { runLoad, type LoadResult } from "../shared/load.ts";
import { median } from "../shared/stats.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const ROUNDS = fromEnv("BENCH_ROUNDS", 3, { min: 1 });
const SECONDS = fromEnv("BENCH_SECONDS", 5, { min: 1 });
const VICTIM_CONNECTIONS = 20;
const HOSTILE_CONNECTIONS = 5;
const HOSTILE_PATH = `/${"a".repeat(16 * 1024)}`;

/** The review's expression, as many times as fit the tenant bounds, and its log amplifier. */
function hostilePolicy(): string {
  const expression = "req.url.path.split('').map(c, c).size() > 0";
  const entries = Array.from({ length: 40 }, () => [
    `  - expressions: ["${expression}"]`,
    "    actions: [{ type: log, config: { metadata: { p: 'x${req.url.path}' } } }]",
  ]).flat();
  const metadata = Array.from({ length: 16 }, (_, key) => `            k${key}: 'x\${req.url.path}\${req.url.path}'`);
  const logs = Array.from({ length: 16 }, () => ["      - type: log", "        config:", "          metadata:", ...metadata]).flat();
  return ["inbound:", ...entries, "  - actions:", ...logs, ""].join("\n");
}

function files(origin: string): Record<string, string> {
  const gateway = localEdgeYaml("edghts_bench", origin, [
    { id: "edghtsrt_victim", match: "/victim" },
    { id: "edghtsrt_hostile", match: "/hostile", policy: "bench-hostile.yaml" },
    { id: "edghtsrt_plain", match: "/plain" },
  ]);
  return { "policies/gateway.yaml": gateway, "policies/bench-hostile.yaml": hostilePolicy() };
}

type Shape = "alone" | "plain" | "hostile";

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-hostile-"));
  const upstream = await startUpstream();
  const script = await bundleWorker({ entry: join(ROOT, "src/worker.ts"), outdir: join(dir, "gateway"), policyFiles: files(upstream.origin) });
  const host = await hostWorker({ name: "tollgate", wranglerConfig: join(ROOT, "wrangler.toml"), script, persistDir: join(dir, "state") });
  const victims: Record<Shape, LoadResult[]> = { alone: [], plain: [], hostile: [] };
  const attackers: Record<Shape, LoadResult[]> = { alone: [], plain: [], hostile: [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const shape of ["alone", "plain", "hostile"] as const) {
        const attack =
          shape === "alone" ? undefined : runLoad(`${host.url}/${shape}${HOSTILE_PATH}`, { connections: HOSTILE_CONNECTIONS, durationSeconds: SECONDS });
        victims[shape].push(await runLoad(`${host.url}/victim`, { connections: VICTIM_CONNECTIONS, durationSeconds: SECONDS }));
        if (attack) attackers[shape].push(await attack);
      }
    }
  } finally {
    await host.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const rps = (results: LoadResult[]) => median(results.map((result) => result.requestsPerSecond));
  const p99 = (results: LoadResult[]) => median(results.map((result) => result.p99));
  console.log(
    `hostile policy bench: ${ROUNDS} alternated rounds of ${SECONDS} s; victim ${VICTIM_CONNECTIONS} connections, second client ${HOSTILE_CONNECTIONS} connections on 16 KB paths`,
  );
  console.log("| second client | victim req/s × alone | victim p99 (ms) | second client req/s |");
  console.log("|---|---:|---:|---:|");
  for (const shape of ["alone", "plain", "hostile"] as const) {
    const second = shape === "alone" ? "—" : rps(attackers[shape]).toFixed(0);
    console.log(
      `| ${shape === "alone" ? "none" : shape === "plain" ? "route without a policy" : "route with the hostile policy"} | ${(rps(victims[shape]) / rps(victims.alone)).toFixed(2)} | ${p99(victims[shape]).toFixed(0)} | ${second} |`,
    );
  }
}

await main();
