/**
 * `npm run bench:ab -- A B`: a paired A/B of two targets' workerd CPU per request, for differences of a few
 * microseconds that alternated runs on two shared cores cannot see (their noise is ±40–70 µs a run).
 *
 * Both targets run in their own workerd at the same time, both pinned to one core, with the load generator
 * pinned to the other; each round loads both for the same seconds and takes B's CPU µs per request minus A's.
 * Whatever else the machine does in a round falls on both alike. Prints every round and the medians.
 *
 * Targets:
 *   flood | allowed | rollout | bare    this tree's gateway with the bench policies, at that route
 *   binding-flood                       the Workers rate-limit binding peer (bench/peer/binding)
 *   fixed-429                           the Worker that answers a fixed 429 and nothing else
 *   tree=<dir>:<route>                  the gateway of another checkout (say a `git worktree` of main), at a route
 *   worker=<file>                       any Worker module without bindings (an experiment), at /
 *
 * Settings (environment): BENCH_AB_ROUNDS (12), BENCH_AB_SECONDS (4), BENCH_AB_CONNECTIONS (8 per target).
 */

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { benchPolicyFiles, PATHS } from "./gateway-files.ts";
import { runLoad } from "../shared/load.ts";
import { median } from "../shared/stats.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker, type WorkerHost } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const USAGE =
  "usage: npm run bench:ab -- <A> <B>, each flood | allowed | rollout | bare | binding-flood | fixed-429 | tree=<dir>:<flood|allowed|rollout|bare> | worker=<file>";

interface TargetSpec {
  readonly label: string;
  readonly entry: string;
  readonly wranglerConfig: string;
  readonly path: string;
  readonly gateway: boolean;
  /** The checkout a gateway target comes from (this one when absent). */
  readonly dir?: string;
}

type GatewayRoute = keyof typeof PATHS;

function gatewayRoute(name: string): GatewayRoute {
  const routes: Record<string, GatewayRoute> = { flood: "flood", allowed: "limited", rollout: "rollout", bare: "bare" };
  const route = routes[name];
  if (!route) throw new Error(`unknown gateway route '${name}'\n${USAGE}`);
  return route;
}

function parseTarget(text: string): TargetSpec {
  if (text === "binding-flood") {
    return {
      label: text,
      entry: join(ROOT, "bench/peer/binding/worker.ts"),
      wranglerConfig: join(ROOT, "bench/peer/binding/wrangler.toml"),
      path: "/flood",
      gateway: false,
    };
  }
  if (text === "fixed-429") {
    return {
      label: text,
      entry: join(ROOT, "bench/peer/fixed-429/worker.ts"),
      wranglerConfig: join(ROOT, "bench/peer/fixed-429/wrangler.toml"),
      path: "/",
      gateway: false,
    };
  }
  if (text.startsWith("worker=")) {
    return {
      label: text,
      entry: resolve(text.slice("worker=".length)),
      wranglerConfig: join(ROOT, "bench/peer/fixed-429/wrangler.toml"),
      path: "/",
      gateway: false,
    };
  }
  const tree = /^tree=(.+):([a-z]+)$/.exec(text);
  const dir = tree ? resolve(tree[1]!) : ROOT;
  const route = gatewayRoute(tree ? tree[2]! : text);
  return { label: text, entry: join(dir, "src/worker.ts"), wranglerConfig: join(dir, "wrangler.toml"), path: PATHS[route], gateway: true, dir };
}

/**
 * The bench policies a gateway is bundled with: another checkout's own (its policy language may lack what this
 * tree's bench policies use, or have more), from wherever that checkout keeps them.
 */
async function policyFilesOf(dir: string, origin: string): Promise<Record<string, string>> {
  if (dir === ROOT) return benchPolicyFiles(origin);
  const file = ["bench/gateway/gateway-files.ts", "bench/gateway-files.ts"].map((path) => join(dir, path)).find((path) => existsSync(path));
  if (!file) throw new Error(`${dir} has no bench/gateway-files.ts`);
  const theirs = (await import(pathToFileURL(file).href)) as { benchPolicyFiles(origin: string): Record<string, string> };
  return theirs.benchPolicyFiles(origin);
}

/** Pins every thread of `pid` to `cpu`; false when taskset is missing or refuses. */
function pin(pid: number, cpu: number): boolean {
  try {
    execFileSync("taskset", ["-a", "-pc", String(cpu), String(pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const progress = (message: string) => process.stderr.write(`· ${message}\n`);

const [textA, textB] = process.argv.slice(2);
if (!textA || !textB) {
  console.error(USAGE);
  process.exit(2);
}
const specs = [parseTarget(textA), parseTarget(textB)] as const;
const rounds = fromEnv("BENCH_AB_ROUNDS", 12, { min: 1 });
const seconds = fromEnv("BENCH_AB_SECONDS", 4, { min: 1 });
const connections = fromEnv("BENCH_AB_CONNECTIONS", 8, { min: 1 });

const dir = mkdtempSync(join(tmpdir(), "tollgate-bench-ab-"));
const upstream = await startUpstream();
const hosts: WorkerHost[] = [];
try {
  for (const [index, spec] of specs.entries()) {
    const outdir = join(dir, `target-${index}`);
    const policyFiles = spec.gateway ? await policyFilesOf(spec.dir ?? ROOT, upstream.origin) : undefined;
    const script = await bundleWorker({ entry: spec.entry, outdir, policyFiles });
    hosts.push(await hostWorker({ name: `ab-${index}`, wranglerConfig: spec.wranglerConfig, script, persistDir: join(outdir, "state") }));
  }
  const pinned = cpus().length >= 2 && hosts.every((host) => host.pid !== undefined && pin(host.pid, 1)) && pin(process.pid, 0);
  progress(
    pinned
      ? "both workerds pinned to cpu 1, the load generator to cpu 0"
      : "NOT pinned (taskset missing, one core, or a workerd pid unknown): rounds will be noisier",
  );

  const loadBoth = () => Promise.all(hosts.map((host, index) => runLoad(host.url + specs[index]!.path, { connections, durationSeconds: seconds })));
  progress(`warm-up ${seconds} s`);
  await loadBoth();

  const cpuPerRequest: [number[], number[]] = [[], []];
  const differences: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const before = hosts.map((host) => host.cpuSeconds());
    const results = await loadBoth();
    const after = hosts.map((host) => host.cpuSeconds());
    const micros = results.map((result, index) => {
      const start = before[index];
      const end = after[index];
      if (start === undefined || end === undefined || result.requests === 0) throw new Error("workerd CPU time is not readable here (Linux /proc only)");
      return ((end - start) * 1e6) / result.requests;
    });
    for (const [index, result] of results.entries()) {
      if (result.failures > 0) throw new Error(`${specs[index]!.label}: ${result.failures} failed requests in round ${round}\n${hosts[index]!.recentOutput()}`);
    }
    cpuPerRequest[0].push(micros[0]!);
    cpuPerRequest[1].push(micros[1]!);
    differences.push(micros[1]! - micros[0]!);
    progress(
      `round ${round}/${rounds}: ${specs[0].label} ${micros[0]!.toFixed(1)} µs/req (${results[0]!.requestsPerSecond.toFixed(0)} req/s), ` +
        `${specs[1].label} ${micros[1]!.toFixed(1)} µs/req (${results[1]!.requestsPerSecond.toFixed(0)} req/s), B − A ${(micros[1]! - micros[0]!).toFixed(1)}`,
    );
  }
  const sorted = [...differences].sort((a, b) => a - b);
  const quartile = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))]!;
  console.log(`A = ${specs[0].label}: median ${median(cpuPerRequest[0]).toFixed(1)} µs of workerd CPU a request`);
  console.log(`B = ${specs[1].label}: median ${median(cpuPerRequest[1]).toFixed(1)} µs of workerd CPU a request`);
  console.log(
    `B − A: median ${median(differences).toFixed(1)} µs a request over ${rounds} paired rounds (quartiles ${quartile(0.25).toFixed(1)} … ${quartile(0.75).toFixed(1)}); ` +
      `B ÷ A ${(median(cpuPerRequest[1]) / median(cpuPerRequest[0])).toFixed(3)}`,
  );
} finally {
  for (const host of hosts) await host.close().catch(() => {});
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
}
