/**
 * `npm run bench:hostile-cidr`: the third review's 56-character expression, `inCidrRanges(req.headers['x-ip'][0],
 * getQueryParam('a'))`, at its worst within every bound, in one workerd: the address and a 16 KiB target of ranges
 * chosen so that every range is parsed and none matches. Two routes answer the request themselves, one after the
 * expression; for each input it prints the workerd CPU a request costs on each (one client sending one after
 * another, as the review did), and the p50 of one other client beside it against its p50 with the edge idle.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { localEdgeYaml } from "../shared/local-edge.ts";
import { median } from "../shared/stats.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker, type WorkerHost } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const ROUNDS = fromEnv("BENCH_ROUNDS", 2, { min: 1 });
const SECONDS = fromEnv("BENCH_SECONDS", 3, { min: 1 });
const TARGET_CHARS = 16 * 1024;

/** Both routes answer the request themselves, so the only difference between them is the expression. */
const ANSWER = ["  - actions: [{ type: custom-response, config: { status_code: 200, body: ok } }]", ""];
const POLICY = ["inbound:", `  - expressions: ["inCidrRanges(req.headers['x-ip'][0], getQueryParam('a'))"]`, "    actions: [{ type: deny }]", ...ANSWER].join(
  "\n",
);
const PLAIN_POLICY = ["inbound:", ...ANSWER].join("\n");

interface Input {
  readonly name: string;
  readonly address: string;
  /** One range, repeated as often as the target holds. */
  readonly range: string;
}

const INPUTS: readonly Input[] = [
  // 16 KiB of `a:`: the slowest text for ipaddr.js to refuse (1.3 ms a parse in Node), parsed once per range before.
  { name: "the review's: 16 KiB address text", address: "a:".repeat(8 * 1024), range: "1" },
  { name: "IPv4 address, IPv4 ranges", address: "192.0.2.1", range: "10.0.0.0/8" },
  { name: "IPv6 address, IPv6 ranges", address: "2001:db8::1", range: "2001:db9::/32" },
  {
    name: "longest IPv6 text, ranges alike",
    address: "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
    range: "ffff:ffff:ffff:ffff:ffff:fffe:255.255.255.255/128",
  },
];

function targetOf(path: string, range: string): { target: string; elements: number } {
  const pair = `a=${encodeURIComponent(range)}&`;
  const elements = Math.floor((TARGET_CHARS - path.length - 1) / pair.length);
  return { target: `${path}?${pair.repeat(elements)}`, elements };
}

function files(origin: string): Record<string, string> {
  const gateway = localEdgeYaml("edghts_bench", origin, [
    { id: "edghtsrt_victim", match: "/victim" },
    { id: "edghtsrt_cidr", match: "/cidr", policy: "bench-cidr.yaml" },
    { id: "edghtsrt_plain", match: "/plain", policy: "bench-plain.yaml" },
  ]);
  return { "policies/gateway.yaml": gateway, "policies/bench-cidr.yaml": POLICY, "policies/bench-plain.yaml": PLAIN_POLICY };
}

/** Sends one request after another on one kept-alive connection for `seconds`: each latency in ms, and the failures. */
async function sequential(url: string, headers: Record<string, string>, seconds: number): Promise<{ latencies: number[]; failed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let failed = 0;
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    const ok = await new Promise<boolean>((done) => {
      const req = request(url, { agent, headers }, (res) => {
        res.resume();
        res.on("end", () => done(res.statusCode !== undefined && res.statusCode < 500));
      });
      req.on("error", () => done(false));
      req.end();
    });
    if (ok) latencies.push(performance.now() - started);
    else failed++;
  }
  agent.destroy();
  return { latencies, failed };
}

/** Workerd CPU in ms per request of `path` for `input`, sent alone. */
async function cpuPerRequest(host: WorkerHost, path: string, input: Input): Promise<{ ms: number; failed: number }> {
  const { target } = targetOf(path, input.range);
  const before = host.cpuSeconds();
  const { latencies, failed } = await sequential(`${host.url}${target}`, { "x-ip": input.address }, SECONDS);
  const after = host.cpuSeconds();
  if (before === undefined || after === undefined || latencies.length === 0) return { ms: Number.NaN, failed };
  return { ms: ((after - before) * 1000) / latencies.length, failed };
}

const p50 = (latencies: number[]) => median(latencies);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-hostile-cidr-"));
  const upstream = await startUpstream();
  const entry = process.env.BENCH_WORKER_ENTRY ?? join(ROOT, "src/worker.ts");
  const script = await bundleWorker({ entry, outdir: join(dir, "gateway"), policyFiles: files(upstream.origin) });
  const host = await hostWorker({ name: "tollgate", wranglerConfig: join(ROOT, "wrangler.toml"), script, persistDir: join(dir, "state") });
  const idle: number[] = [];
  const results = INPUTS.map(() => ({ withPolicy: [] as number[], without: [] as number[], beside: [] as number[], besidePlain: [] as number[], failed: 0 }));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      idle.push(p50((await sequential(`${host.url}/victim`, {}, SECONDS)).latencies));
      for (const [index, input] of INPUTS.entries()) {
        const result = results[index]!;
        const policed = await cpuPerRequest(host, "/cidr", input);
        const plain = await cpuPerRequest(host, "/plain", input);
        result.withPolicy.push(policed.ms);
        result.without.push(plain.ms);
        for (const [path, into] of [
          ["/cidr", result.beside],
          ["/plain", result.besidePlain],
        ] as const) {
          const attack = sequential(`${host.url}${targetOf(path, input.range).target}`, { "x-ip": input.address }, SECONDS);
          into.push(p50((await sequential(`${host.url}/victim`, {}, SECONDS)).latencies));
          result.failed += (await attack).failed;
        }
        result.failed += policed.failed + plain.failed;
      }
    }
  } finally {
    await host.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const idleP50 = median(idle);
  console.log(
    `inCidrRanges bench: ${ROUNDS} alternated rounds of ${SECONDS} s a phase; one client at a time; the other client's p50 idle: ${idleP50.toFixed(2)} ms`,
  );
  console.log(
    "| input | ranges | workerd CPU a request, with the policy (ms) | without (ms) | the policy's own (ms) | other client's p50 beside it × idle | 5xx or failed |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const [index, input] of INPUTS.entries()) {
    const { withPolicy, without, beside, besidePlain, failed } = results[index]!;
    const own = median(withPolicy) - median(without);
    console.log(
      `| ${input.name} | ${targetOf("/cidr", input.range).elements} | ${median(withPolicy).toFixed(1)} | ${median(without).toFixed(1)} | ${own.toFixed(1)} | ${(median(beside) / idleP50).toFixed(2)} | ${(median(besidePlain) / idleP50).toFixed(2)} | ${failed} |`,
    );
  }
}

await main();
