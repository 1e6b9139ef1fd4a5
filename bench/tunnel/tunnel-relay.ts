/**
 * `npm run bench:tunnel`: the relay through a tunnel, side by side in one run with the same requests sent
 * through the edge straight to the upstream (an origin route), and with the upstream hit directly. Small
 * requests under load (autocannon), then 10 MiB downloads and uploads, targets alternated round by round,
 * medians and per-round ratios; then a soak through the tunnel that samples the edge's and the agent's
 * memory. The edge is one workerd via Miniflare; the agent is the CLI in its own process. The relay floor
 * (bench/tunnel/tunnel-floor.ts: the least relay this platform allows, and its own origin fetch) runs in the same
 * rounds, for context: what Tollgate adds, and what any relay through a Durable Object costs.
 * Settings: BENCH_CONNECTIONS (50), BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_TRANSFERS (3: per direction,
 * target and round), BENCH_SOAK_SECONDS (60; 0 skips), BENCH_PARTS (small,transfer,soak).
 * Progress on stderr, results on stdout.
 */

import autocannon from "autocannon";
import { cpus, loadavg } from "node:os";
import { cpuSeconds } from "../shared/process-cpu.ts";
import { median } from "../shared/stats.ts";
import { startBenchAgent } from "./tunnel-agent.ts";
import { DIRECT_HOST, startBenchEdge } from "./tunnel-edge.ts";
import { FLOOR_ORIGIN_HOST, startRelayFloor } from "./tunnel-floor.ts";
import { soak, type MemoryTrace } from "./tunnel-memory.ts";
import { transfer, type Direction, type TransferTarget } from "./tunnel-transfer.ts";
import { startTunnelUpstream } from "./tunnel-upstream.ts";

function setting(name: string, fallback: number): number {
  const text = process.env[name];
  const value = text === undefined || text === "" ? fallback : Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number ≥ 0 (got '${text}')`);
  return value;
}
const connections = setting("BENCH_CONNECTIONS", 50);
const seconds = setting("BENCH_SECONDS", 5);
const rounds = setting("BENCH_ROUNDS", 3);
const transfersPerRound = setting("BENCH_TRANSFERS", 3);
const soakSeconds = setting("BENCH_SOAK_SECONDS", 60);
const parts = new Set((process.env.BENCH_PARTS ?? "small,transfer,soak").split(",").map((part) => part.trim()));
const progress = (message: string) => process.stderr.write(`· ${message}\n`);
const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, load ${loadavg()[0]!.toFixed(2)}, Node ${process.version}`;

const upstream = await startTunnelUpstream();
const edge = await startBenchEdge(upstream.url);
progress(`upstream ${upstream.url}, edge ${edge.url} (one workerd, pid ${edge.pid ?? "unknown"})`);
const agent = await startBenchAgent(edge.url, upstream.port);
progress(`tunnel ${agent.publicUrl} (agent pid ${agent.pid})`);
const floor = await startRelayFloor(upstream.url, upstream.port);
progress(`relay floor ${floor.url} (workerd pid ${floor.edgePid ?? "unknown"}, agent pid ${floor.agentPid ?? "unknown"})`);

interface Target extends TransferTarget {
  readonly label: string;
  /** The workerd serving the target and the agent relaying for it, for their CPU time. */
  readonly edgePid?: number;
  readonly agentPid?: number;
}

const targets: Target[] = [
  { id: "tunnel", label: "through a tunnel", url: edge.url, host: new URL(agent.publicUrl).host, edgePid: edge.pid, agentPid: agent.pid },
  { id: "edge", label: "through the edge, origin route", url: edge.url, host: DIRECT_HOST, edgePid: edge.pid },
  { id: "floor", label: "relay floor (context)", url: floor.url, edgePid: floor.edgePid, agentPid: floor.agentPid },
  { id: "floor-origin", label: "relay floor's origin fetch (context)", url: floor.url, host: FLOOR_ORIGIN_HOST, edgePid: floor.edgePid },
  { id: "upstream", label: "upstream directly", url: upstream.url },
];
const tunnel = targets[0]!;

interface SmallSample {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  /** CPU seconds of workerd and of the agent during the run. */
  edgeCpu?: number;
  agentCpu?: number;
}

async function load(target: Target, durationSeconds: number): Promise<SmallSample> {
  const edgeBefore = cpuSeconds(target.edgePid);
  const agentBefore = cpuSeconds(target.agentPid);
  const result = await autocannon({ url: `${target.url}/`, connections, duration: durationSeconds, headers: target.host ? { host: target.host } : {} });
  const edgeAfter = cpuSeconds(target.edgePid);
  const agentAfter = cpuSeconds(target.agentPid);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    errors: result.errors + result.timeouts + result.non2xx,
    edgeCpu: edgeBefore !== undefined && edgeAfter !== undefined ? edgeAfter - edgeBefore : target.edgePid === undefined ? 0 : undefined,
    agentCpu: agentBefore !== undefined && agentAfter !== undefined ? agentAfter - agentBefore : target.agentPid === undefined ? 0 : undefined,
  };
}

const rotated = <T>(list: readonly T[], by: number) => list.map((_, i) => list[(i + by) % list.length]!);
const directions: Direction[] = ["download", "upload"];
/** Per target: one small-request sample per round. */
const small = new Map<string, SmallSample[]>(targets.map((t) => [t.id, []]));
/** Per direction and target: per round, the median MB/s of that round's transfers. */
const transfers = new Map<string, number[]>(directions.flatMap((d) => targets.map((t) => [`${d}:${t.id}`, []] as [string, number[]])));
let memory: Array<MemoryTrace | undefined> = [];
let soakLine = "";

try {
  if (parts.has("small")) {
    for (const target of targets) {
      progress(`warm-up: ${target.label}`);
      await load(target, 1);
    }
  }
  for (let round = 0; round < rounds; round++) {
    const order = rotated(targets, round);
    if (parts.has("small")) {
      for (const target of order) {
        const sample = await load(target, seconds);
        small.get(target.id)!.push(sample);
        progress(`round ${round + 1}/${rounds} ${target.label}: ${sample.rps.toFixed(0)} req/s, p99 ${sample.p99} ms, errors ${sample.errors}`);
      }
    }
    if (parts.has("transfer")) {
      for (const direction of directions) {
        const taken = new Map<string, number[]>(targets.map((t) => [t.id, []]));
        for (let i = 0; i < transfersPerRound; i++) for (const target of rotated(order, i)) taken.get(target.id)!.push(await transfer(target, direction));
        for (const target of targets) transfers.get(`${direction}:${target.id}`)!.push(median(taken.get(target.id)!));
        progress(`round ${round + 1}/${rounds} 10 MiB ${direction}s MB/s: ${targets.map((t) => `${t.id} ${median(taken.get(t.id)!).toFixed(1)}`).join(", ")}`);
      }
    }
  }
  if (parts.has("soak") && soakSeconds > 0) {
    progress(`soak: ${soakSeconds} s through the tunnel (${connections} connections of small requests + 10 MiB downloads and uploads in turn)`);
    memory = await soak({
      seconds: soakSeconds,
      processes: [
        { name: "edge (workerd)", pid: edge.pid },
        { name: "agent", pid: agent.pid },
      ],
      async load(duration) {
        let running = true;
        let moved = 0;
        const big = (async () => {
          for (let i = 0; running; i++) {
            await transfer(tunnel, directions[i % 2]!);
            moved++;
          }
        })();
        const result = await autocannon({ url: `${tunnel.url}/`, connections, duration, headers: { host: tunnel.host! } });
        running = false;
        await big;
        soakLine =
          `soak: ${result.requests.total} small requests (${result.requests.average.toFixed(0)} req/s, p99 ${result.latency.p99} ms, ` +
          `errors ${result.errors + result.timeouts + result.non2xx}) and ${moved} transfers of 10 MiB in ${duration} s`;
      },
    });
  }
} finally {
  await floor.close();
  await agent.close();
  await edge.close();
  await upstream.close();
}

// ---- report ----

const fmt = (value: number | undefined, digits = 2) => (value !== undefined && Number.isFinite(value) ? value.toFixed(digits) : "n/a");
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
/** Median over rounds of a / b, each from the same round. */
const perRound = (a: readonly number[], b: readonly number[]) => (a.length === 0 || a.length !== b.length ? Number.NaN : median(a.map((x, i) => x / b[i]!)));
const smallOf = (id: string, pick: (s: SmallSample) => number) => small.get(id)!.map(pick);
const cpuPerRequest = (id: string, pick: (s: SmallSample) => number | undefined) => {
  const list = small.get(id)!;
  const requests = list.reduce((sum, s) => sum + s.requests, 0);
  if (requests === 0 || list.some((s) => pick(s) === undefined)) return undefined;
  return (list.reduce((sum, s) => sum + pick(s)!, 0) * 1e6) / requests;
};

interface Check {
  readonly name: string;
  readonly measured: number;
  readonly wanted: string;
  readonly met: boolean;
  readonly note?: string;
}
const errorsOf = (ids: readonly string[]) => ids.reduce((sum, id) => sum + smallOf(id, (s) => s.errors).reduce((a, b) => a + b, 0), 0);
const errorNote = (ids: readonly string[]) => (errorsOf(ids) > 0 ? `${errorsOf(ids)} error answers: not trustworthy` : undefined);
const checks: Check[] = [];
if (parts.has("small")) {
  const rps = perRound(
    smallOf("tunnel", (s) => s.rps),
    smallOf("edge", (s) => s.rps),
  );
  const p99 = perRound(
    smallOf("tunnel", (s) => s.p99),
    smallOf("edge", (s) => s.p99),
  );
  checks.push({ name: "small requests, tunnel ÷ origin route", measured: rps, wanted: "≥ 0.9 ×", met: rps >= 0.9, note: errorNote(["tunnel", "edge"]) });
  checks.push({ name: "p99, tunnel ÷ origin route", measured: p99, wanted: "≤ 1.5 ×", met: p99 <= 1.5, note: errorNote(["tunnel", "edge"]) });
}
if (parts.has("transfer")) {
  for (const direction of directions) {
    const ratio = perRound(transfers.get(`${direction}:tunnel`)!, transfers.get(`${direction}:edge`)!);
    checks.push({ name: `10 MiB ${direction}s, tunnel ÷ origin route`, measured: ratio, wanted: "≥ 0.6 ×", met: ratio >= 0.6 });
  }
}
/** Flat: the growth after the warm-up is at most a tenth of where it started. */
const FLAT_SHARE = 0.1;
for (const trace of memory) {
  if (!trace) continue;
  const share = trace.growth / trace.start;
  checks.push({ name: `memory flat, ${trace.name}: growth ÷ start`, measured: share, wanted: `≤ ${FLAT_SHARE}`, met: share <= FLAT_SHARE });
}

/** The relay floor's ratio to its own origin fetch (the platform's cost of relaying) and the tunnel's to the floor. */
const floorContext = (what: string, of: (id: string) => readonly number[]) =>
  `context: ${what}, relay floor ÷ its origin fetch ${fmt(perRound(of("floor"), of("floor-origin")))} ×, ` +
  `tunnel ÷ relay floor ${fmt(perRound(of("tunnel"), of("floor")))} × (not targets)`;

const lines = [
  `Tunnel relay benchmark — ${connections} connections × ${seconds} s × ${rounds} rounds (alternated), ${transfersPerRound} transfers of 10 MiB per direction, target and round; medians`,
  `machine: ${machine}`,
  "",
  "| path | small req/s | p50 ms | p99 ms | errors | edge CPU µs/req | agent CPU µs/req | 10 MiB download MB/s | 10 MiB upload MB/s |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...targets.map((t) => {
    const m = (list: readonly number[]) => (list.length === 0 ? undefined : median(list));
    return (
      `| ${t.label} | ${fmt(m(smallOf(t.id, (s) => s.rps)), 0)} | ${fmt(m(smallOf(t.id, (s) => s.p50)), 0)} | ${fmt(m(smallOf(t.id, (s) => s.p99)), 0)} | ` +
      `${errorsOf([t.id])} | ${fmt(
        cpuPerRequest(t.id, (s) => s.edgeCpu),
        0,
      )} | ${fmt(
        cpuPerRequest(t.id, (s) => s.agentCpu),
        0,
      )} | ` +
      `${fmt(m(transfers.get(`download:${t.id}`)!), 1)} | ${fmt(m(transfers.get(`upload:${t.id}`)!), 1)} |`
    );
  }),
  ...(memory.some(Boolean)
    ? [
        "",
        soakLine,
        "",
        "| process | RSS idle | start (after warm-up) | end | peak | growth | slope after warm-up |",
        "|---|---:|---:|---:|---:|---:|---:|",
        ...memory.flatMap((t) =>
          t
            ? [
                `| ${t.name} | ${mib(t.idle)} | ${mib(t.start)} | ${mib(t.end)} | ${mib(t.peak)} | ${t.growth >= 0 ? "+" : "−"}${mib(Math.abs(t.growth))} | ${(t.slopePerMinute / 1024 / 1024).toFixed(1)} MiB/min |`,
              ]
            : [],
        ),
      ]
    : []),
  "",
  "Targets (ratios are medians of per-round ratios from this run):",
  ...checks.map(
    (c) =>
      `${c.met ? "met    " : "NOT met"}  ${c.name}: ${fmt(c.measured)}${c.wanted.endsWith("×") ? " ×" : ""} (wanted ${c.wanted})${c.note ? ` — ${c.note}` : ""}`,
  ),
  ...(parts.has("small")
    ? [
        `context: small requests, tunnel ÷ upstream directly ${fmt(
          perRound(
            smallOf("tunnel", (s) => s.rps),
            smallOf("upstream", (s) => s.rps),
          ),
        )} × (a Node server vs. a whole Worker request: not a target)`,
        floorContext("small requests", (id) => smallOf(id, (s) => s.rps)),
        floorContext("p99 (lower is better)", (id) => smallOf(id, (s) => s.p99)),
      ]
    : []),
  ...(parts.has("transfer") ? directions.map((d) => floorContext(`10 MiB ${d}s`, (id) => transfers.get(`${d}:${id}`)!)) : []),
];
process.stdout.write(`${lines.join("\n")}\n`);
