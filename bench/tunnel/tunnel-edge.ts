/**
 * The edge for the tunnel benchmark: the real Worker (src/worker.ts) bundled as `wrangler deploy` does,
 * served by one workerd through the Miniflare API with logging off (not `wrangler dev`: see BENCH.md),
 * with a gateway config whose only route proxies to the bench upstream — the "direct" path the tunnel
 * is compared with.
 */

import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { childProcesses } from "../shared/process-cpu.ts";
import { hostWorker } from "../shared/workerd.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const DEV_KEY = "tgk_dev_local_only_0000000000000000";
/** Host of the gateway route that proxies straight to the upstream. */
export const DIRECT_HOST = "direct.bench";

export interface BenchEdge {
  readonly url: string;
  /** The workerd process serving the edge (Linux), for its CPU time and memory; undefined when unknown. */
  readonly pid: number | undefined;
  /** The last lines workerd wrote (the Worker's console output), for diagnostics. */
  recentOutput(): string;
  close(): Promise<void>;
}

export interface BenchEdgeOptions {
  /** Opens workerd's inspector on this port (profiling only: an inspector costs throughput). */
  readonly inspectorPort?: number;
  /** Further edges (YAML list items under `edges:`) and the policy files they name, e.g. a rate-limited route. */
  readonly extraEdges?: readonly string[];
  readonly extraPolicyFiles?: Readonly<Record<string, string>>;
}

export async function startBenchEdge(origin: string, options: BenchEdgeOptions = {}): Promise<BenchEdge> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-tunnel-bench-"));
  const gateway = [
    "edges:",
    "  - id: edghts_bench",
    `    hostnames: ["${DIRECT_HOST}"]`,
    "    routes:",
    "      - id: edghtsrt_direct",
    "        match: /",
    `        upstream: ${origin}`,
    ...(options.extraEdges ?? []),
    "",
  ];
  const script = await bundleWorker({
    entry: join(ROOT, "src/worker.ts"),
    outdir: dir,
    policyFiles: { ...options.extraPolicyFiles, "policies/gateway.yaml": gateway.join("\n") },
  });
  const before = new Set(childProcesses("workerd"));
  const host = await hostWorker({
    name: "tollgate-bench",
    wranglerConfig: join(ROOT, "wrangler.toml"),
    script,
    vars: { TOLLGATE_API_KEYS: `acct_dev:${createHash("sha256").update(DEV_KEY).digest("hex")}`, TUNNEL_DOMAIN: "localhost" },
    persistDir: join(dir, "state"),
    ...(options.inspectorPort === undefined ? {} : { inspectorPort: options.inspectorPort }),
  });
  const started = childProcesses("workerd").filter((pid) => !before.has(pid));
  return {
    url: host.url,
    pid: started.length === 1 ? started[0] : undefined,
    recentOutput: () => host.recentOutput(),
    close: async () => {
      await host.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
