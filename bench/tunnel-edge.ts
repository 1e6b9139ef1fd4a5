/**
 * The edge for the tunnel benchmark: the real Worker (src/worker.ts) bundled as `wrangler deploy` does,
 * served by one workerd through the Miniflare API with logging off (not `wrangler dev`: see BENCH.md),
 * with a gateway config whose only route proxies to the bench upstream — the "direct" path the tunnel
 * is compared with.
 */

import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { Miniflare, NoOpLog } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
export const DEV_KEY = "tgk_dev_local_only_0000000000000000";
/** Host of the gateway route that proxies straight to the upstream. */
export const DIRECT_HOST = "direct.bench";

export interface BenchEdge {
  readonly url: string;
  close(): Promise<void>;
}

/** Replaces src/generated/policy-files.ts in the bundle with a gateway of one origin route. */
function gatewayFiles(origin: string): Plugin {
  const files = {
    "policies/gateway.yaml": ["edges:", "  - id: edghts_bench", `    hostnames: ["${DIRECT_HOST}"]`, "    routes:", "      - id: edghtsrt_direct", "        match: /", `        upstream: ${origin}`, ""].join("\n"),
  };
  return {
    name: "bench-gateway-files",
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /(^|[\\/])generated[\\/]policy-files(\.ts)?$/ }, (args) => ({ path: args.path, namespace: "bench-gateway-files" }));
      pluginBuild.onLoad({ filter: /.*/, namespace: "bench-gateway-files" }, () => ({ contents: `export const policyFiles = ${JSON.stringify(files)};\n`, loader: "ts" }));
    },
  };
}

export async function startBenchEdge(origin: string): Promise<BenchEdge> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-tunnel-bench-"));
  const script = join(dir, "worker.js");
  await build({
    entryPoints: [join(ROOT, "src/worker.ts")],
    outfile: script,
    bundle: true,
    format: "esm",
    target: "es2024",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    keepNames: true,
    external: ["cloudflare:*"],
    logLevel: "warning",
    plugins: [gatewayFiles(origin)],
  });
  // A copy of wrangler.toml, so a developer's .dev.vars never reaches the measured Worker.
  mkdirSync(join(dir, "config"));
  const config = join(dir, "config", "wrangler.toml");
  copyFileSync(join(ROOT, "wrangler.toml"), config);
  const { workerOptions } = unstable_getMiniflareWorkerOptions(config);
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    log: new NoOpLog(),
    logRequests: false,
    durableObjectsPersist: join(dir, "state"),
    workers: [
      {
        name: "tollgate-bench",
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        durableObjects: workerOptions.durableObjects,
        bindings: {
          ...workerOptions.bindings,
          TOLLGATE_API_KEYS: `acct_dev:${createHash("sha256").update(DEV_KEY).digest("hex")}`,
          TUNNEL_DOMAIN: "localhost",
        },
        modules: true,
        modulesRoot: dirname(script),
        scriptPath: script,
      },
    ],
  });
  const url = (await mf.ready).toString().replace(/\/$/, "");
  return {
    url,
    close: async () => {
      await mf.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
