/**
 * `npm run bench:agent-ab -- <checkout>`: the agent's CPU per small request, this checkout's agent against the
 * one of another checkout (e.g. a `git worktree` of an older commit, with node_modules linked), both connected
 * to the same edge (this checkout's Worker, one workerd) and the same upstream, each with its own tunnel. Rounds
 * alternate which agent goes first; the load is the same for both (autocannon, BENCH_CONNECTIONS at
 * BENCH_RATE requests a second, BENCH_SECONDS per sample), so the edge batches alike for both and CPU per request
 * compares the agents alone. Prints each round's figures and the median ratio this ÷ other.
 * Settings: BENCH_CONNECTIONS (20), BENCH_RATE (1500), BENCH_SECONDS (5), BENCH_ROUNDS (6).
 */

import autocannon from "autocannon";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { cpuSeconds } from "../shared/process-cpu.ts";
import { median } from "../shared/stats.ts";
import { startBenchAgent, type BenchAgent } from "./tunnel-agent.ts";
import { startBenchEdge } from "./tunnel-edge.ts";
import { startTunnelUpstream } from "./tunnel-upstream.ts";

function setting(name: string, fallback: number): number {
  const text = process.env[name];
  const value = text === undefined || text === "" ? fallback : Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a whole number > 0 (got '${text}')`);
  return value;
}
const other = process.argv[2];
if (!other) throw new Error("usage: npm run bench:agent-ab -- <another checkout with node_modules>");
const connections = setting("BENCH_CONNECTIONS", 20);
const rate = setting("BENCH_RATE", 1500);
const seconds = setting("BENCH_SECONDS", 5);
const rounds = setting("BENCH_ROUNDS", 6);
const progress = (message: string) => process.stderr.write(`· ${message}\n`);

const upstream = await startTunnelUpstream();
const edge = await startBenchEdge(upstream.url);
const agents: Array<{ label: string; agent: BenchAgent }> = [
  { label: "this checkout", agent: await startBenchAgent(edge.url, upstream.port) },
  { label: resolve(other), agent: await startBenchAgent(edge.url, upstream.port, resolve(other)) },
];

/** The agent's CPU microseconds per request over one sample, and how many requests failed. */
async function sample({ agent }: { agent: BenchAgent }): Promise<{ cpuUs: number; requests: number; errors: number }> {
  const before = cpuSeconds(agent.pid)!;
  const result = await autocannon({
    url: `${edge.url}/`,
    connections,
    overallRate: rate,
    duration: seconds,
    headers: { host: new URL(agent.publicUrl).host },
  });
  const cpu = cpuSeconds(agent.pid)! - before;
  return { cpuUs: (cpu * 1e6) / result.requests.total, requests: result.requests.total, errors: result.errors + result.timeouts + result.non2xx };
}

const cpu: number[][] = [[], []];
const ratios: number[] = [];
try {
  for (const each of agents) await sample(each); // warm-up: JIT and connections
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    const taken: number[] = [];
    for (const index of order) {
      const result = await sample(agents[index]!);
      if (result.errors > 0) progress(`${agents[index]!.label}: ${result.errors} requests failed`);
      taken[index] = result.cpuUs;
      cpu[index]!.push(result.cpuUs);
    }
    ratios.push(taken[0]! / taken[1]!);
    progress(
      `round ${round + 1}/${rounds}: this ${taken[0]!.toFixed(0)} µs, other ${taken[1]!.toFixed(0)} µs of agent CPU a request (load ${loadavg()[0]!.toFixed(2)})`,
    );
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(`agent CPU per small request at ${rate}/s over ${connections} connections, ${rounds} alternated rounds of ${seconds} s:`);
  for (const [index, { label }] of agents.entries())
    console.log(`  ${label}: median ${median(cpu[index]!).toFixed(0)} µs (${cpu[index]!.map((v) => v.toFixed(0)).join(", ")})`);
  console.log(`  this ÷ other: median ${median(ratios).toFixed(3)} (range ${sorted[0]!.toFixed(3)} … ${sorted.at(-1)!.toFixed(3)})`);
} finally {
  for (const { agent } of agents) await agent.close();
  await edge.close();
  await upstream.close();
}
