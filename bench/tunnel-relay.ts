/**
 * `npm run bench:tunnel`: relay throughput and p99 through a tunnel, side by side in one run with the same
 * requests sent through the edge straight to the upstream (an origin route), and with the upstream hit
 * directly. Small requests under load (autocannon, targets alternated round by round, medians), then
 * 10 MiB downloads. The edge is one workerd via Miniflare; the agent is the CLI in its own process.
 * Settings: BENCH_CONNECTIONS (50), BENCH_SECONDS (5), BENCH_ROUNDS (3). Progress on stderr, results on stdout.
 */

import autocannon from "autocannon";
import { spawn } from "node:child_process";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { DIRECT_HOST, startBenchEdge } from "./tunnel-edge.ts";

const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const BIG = 10 * 1024 * 1024;
const progress = (message: string) => process.stderr.write(`· ${message}\n`);

// The upstream: 12 bytes for small requests, /big for the large transfer.
const bigBody = Buffer.alloc(BIG, 0x61);
const upstream = createServer((req, res) => {
  if (req.url === "/big") {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(BIG) });
    res.end(bigBody);
    return;
  }
  res.writeHead(200, { "content-type": "text/plain" });
  res.end("hello world\n");
});
await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const edge = await startBenchEdge(upstreamUrl);
progress(`upstream ${upstreamUrl}, edge ${edge.url} (one workerd)`);

const agent = spawn(
  process.execPath,
  [
    fileURLToPath(new URL("../bin/tollgate.mjs", import.meta.url)),
    "agent",
    "http",
    upstreamUrl.split(":").at(-1)!,
    "--server-addr",
    edge.url,
    "--web-addr",
    "false",
    "--log",
    "logfmt",
  ],
  { stdio: ["ignore", "pipe", "inherit"] },
);
const publicUrl = await new Promise<string>((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("the agent did not open its tunnel within 30 s")), 30_000);
  createInterface({ input: agent.stdout! }).on("line", (line) => {
    const match = /msg="tunnel online" .*url=(\S+)/.exec(line);
    if (match) {
      clearTimeout(timer);
      resolve(match[1]);
    }
  });
  agent.once("exit", (code) => reject(new Error(`the agent exited with ${code}`)));
});
progress(`tunnel ${publicUrl} (agent pid ${agent.pid})`);

interface Target {
  readonly id: string;
  readonly label: string;
  readonly url: string;
  readonly host?: string;
}

const targets: Target[] = [
  { id: "tunnel", label: "through a tunnel", url: edge.url, host: new URL(publicUrl).host },
  { id: "edge", label: "through the edge, origin route", url: edge.url, host: DIRECT_HOST },
  { id: "upstream", label: "upstream directly", url: upstreamUrl },
];

interface Sample {
  rps: number;
  p99: number;
  errors: number;
}

async function load(target: Target, durationSeconds: number): Promise<Sample> {
  const result = await autocannon({
    url: `${target.url}/`,
    connections,
    duration: durationSeconds,
    headers: target.host ? { host: target.host } : {},
  });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.timeouts + result.non2xx };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

function download(target: Target): Promise<number> {
  const url = new URL("/big", target.url);
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    request({ host: url.hostname, port: url.port, path: url.pathname, headers: target.host ? { host: target.host } : {} }, (response) => {
      let bytes = 0;
      response.on("data", (chunk: Buffer) => (bytes += chunk.length));
      response.on("end", () => {
        if (bytes !== BIG || response.statusCode !== 200) return reject(new Error(`${target.id}: ${response.statusCode}, ${bytes} bytes`));
        resolve(BIG / 1e6 / (Number(process.hrtime.bigint() - started) / 1e9));
      });
    })
      .on("error", reject)
      .end();
  });
}

const samples = new Map<string, Sample[]>(targets.map((target) => [target.id, []]));
const megabytesPerSecond = new Map<string, number[]>(targets.map((target) => [target.id, []]));
try {
  for (const target of targets) {
    progress(`warm-up: ${target.label}`);
    await load(target, 1);
  }
  for (let round = 0; round < rounds; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]);
    for (const target of order) {
      const sample = await load(target, seconds);
      samples.get(target.id)!.push(sample);
      progress(`round ${round + 1}/${rounds} ${target.label}: ${sample.rps.toFixed(0)} req/s, p99 ${sample.p99} ms, errors ${sample.errors}`);
    }
    for (const target of order) megabytesPerSecond.get(target.id)!.push(await download(target));
  }
} finally {
  agent.kill("SIGINT");
  await new Promise((resolve) => agent.once("exit", resolve));
  await edge.close();
  upstream.close();
}

const summary = new Map(
  targets.map((target) => {
    const list = samples.get(target.id)!;
    return [
      target.id,
      {
        rps: median(list.map((s) => s.rps)),
        p99: median(list.map((s) => s.p99)),
        errors: list.reduce((sum, s) => sum + s.errors, 0),
        mbps: median(megabytesPerSecond.get(target.id)!),
      },
    ];
  }),
);
const row = (id: string) => summary.get(id)!;
const ratio = (a: number, b: number) => (b === 0 ? NaN : a / b);
const fmt = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : "n/a");

const lines = [
  `Tunnel relay benchmark — ${connections} connections × ${seconds} s × ${rounds} rounds (alternated), medians`,
  `machine: ${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, load ${loadavg()[0]!.toFixed(2)}, Node ${process.version}`,
  "",
  "| path | small req/s | p99 ms | errors | 10 MiB download MB/s |",
  "|---|---:|---:|---:|---:|",
  ...targets.map((target) => {
    const r = row(target.id);
    return `| ${target.label} | ${fmt(r.rps, 0)} | ${fmt(r.p99, 0)} | ${r.errors} | ${fmt(r.mbps, 1)} |`;
  }),
  "",
  `throughput, tunnel ÷ edge origin route: ${fmt(ratio(row("tunnel").rps, row("edge").rps))} × (target ≥ 0.5)`,
  `p99, tunnel ÷ edge origin route:        ${fmt(ratio(row("tunnel").p99, row("edge").p99))} × (lower is better)`,
  `10 MiB download, tunnel ÷ edge:        ${fmt(ratio(row("tunnel").mbps, row("edge").mbps))} ×`,
  `throughput, tunnel ÷ upstream direct:   ${fmt(ratio(row("tunnel").rps, row("upstream").rps))} × (a Node server vs. a whole Worker request: context, not a target)`,
  `p99, tunnel ÷ upstream direct:          ${fmt(ratio(row("tunnel").p99, row("upstream").p99))} ×`,
];
process.stdout.write(`${lines.join("\n")}\n`);
