/**
 * `npx tsx bench/idle/idle-after-load.ts`: what a Worker's workerd keeps, and spends, once a mixed load is over —
 * clients past their rate limit (each its own bucket, its own Durable Object) and 10 MiB downloads through a
 * tunnel. Tollgate's edge (bench/tunnel/tunnel-edge.ts, with a rate-limited host) and the relay floor (a bare relay
 * Worker and a bare pass-through: bench/tunnel/tunnel-floor.ts) take the same load in turn, each in a fresh workerd
 * with its agent; then no request comes and workerd's RSS and CPU are read from /proc every second.
 * `peer` is hono-rate-limiter with its Durable Object store (bench/peer/: one object per client, each with an
 * alarm, as Tollgate's buckets), rate-limited part only: it has no tunnel. `wrangler` is Tollgate as `npm
 * start` runs it (scripts/start-dev.mjs: wrangler dev, a proxy workerd in front of the Worker's, request
 * logging, an inspector attached), its committed /demo route limited to 5 a minute per client: not a benchmark
 * host (BENCH.md), but what a developer watches; all three of its processes are read.
 *
 * Settings: BENCH_IDLE_TARGETS (tollgate,floor; also peer, wrangler), BENCH_IDLE_PARTS (limited,tunnel),
 * BENCH_ROUNDS (1), BENCH_IDLE_LOAD_SECONDS (25), BENCH_IDLE_SECONDS (60), BENCH_IDLE_CLIENTS (50: distinct
 * client addresses), BENCH_CONNECTIONS (50), BENCH_IDLE_DOWNLOADS (2: downloads in flight), BENCH_IDLE_HEAP (0;
 * 1: tollgate and floor open workerd's inspector and V8's heap is read too, to tell the isolate's memory from
 * workerd's own; workerd's inspector never answers HeapProfiler.collectGarbage, so garbage not yet collected
 * counts). Progress on stderr, results on stdout.
 */

import autocannon from "autocannon";
import { cpus, loadavg } from "node:os";
import { fromEnv } from "../shared/config.ts";
import { cpuSeconds, memoryOf, type Memory } from "../shared/process-cpu.ts";
import { startBenchAgent } from "../tunnel/tunnel-agent.ts";
import { startBenchEdge } from "../tunnel/tunnel-edge.ts";
import { FLOOR_ORIGIN_HOST, startRelayFloor } from "../tunnel/tunnel-floor.ts";
import { transfer } from "../tunnel/tunnel-transfer.ts";
import { startTunnelUpstream } from "../tunnel/tunnel-upstream.ts";

import { freePort, heapReader, LIMITED_EDGE, LIMITED_HOST, LIMITED_POLICY, startPeer, startWrangler, type Heap, type Running } from "./idle-targets.ts";

const list = (name: string, fallback: string) =>
  (process.env[name] || fallback)
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
const targetIds = list("BENCH_IDLE_TARGETS", "tollgate,floor");
const parts = new Set(list("BENCH_IDLE_PARTS", "limited,tunnel"));
const rounds = fromEnv("BENCH_ROUNDS", 1, { min: 1 });
const loadSeconds = fromEnv("BENCH_IDLE_LOAD_SECONDS", 25, { min: 1 });
const idleSeconds = fromEnv("BENCH_IDLE_SECONDS", 60, { min: 1 });
const clients = fromEnv("BENCH_IDLE_CLIENTS", 50, { min: 1 });
const connections = fromEnv("BENCH_CONNECTIONS", 50, { min: 1 });
const inFlight = fromEnv("BENCH_IDLE_DOWNLOADS", 2, { min: 0 });
const readHeap = fromEnv("BENCH_IDLE_HEAP", 0) === 1;
const progress = (message: string) => process.stderr.write(`· ${message}\n`);

async function start(id: string, upstream: { url: string; port: number }): Promise<Running> {
  if (id === "wrangler") return startWrangler(upstream);
  if (id === "peer") return startPeer(upstream);
  const inspectorPort = readHeap ? await freePort() : undefined;
  if (id === "floor") {
    const floor = await startRelayFloor(upstream.url, upstream.port, { inspectorPort });
    if (floor.edgePid === undefined) throw new Error("the floor's workerd could not be told apart");
    const heap = inspectorPort === undefined ? undefined : await heapReader(inspectorPort, "relay-floor");
    return {
      processes: [{ name: "workerd", pid: floor.edgePid }],
      small: { url: floor.url, host: FLOOR_ORIGIN_HOST, path: "/" },
      tunnel: { id, url: floor.url },
      heap: heap?.read,
      close: async () => {
        heap?.close();
        await floor.close();
      },
    };
  }
  const edge = await startBenchEdge(upstream.url, {
    inspectorPort,
    extraEdges: LIMITED_EDGE.map((line) => line.replace("ORIGIN", upstream.url)),
    extraPolicyFiles: { "policies/bench-idle-limited.yaml": LIMITED_POLICY },
  });
  if (edge.pid === undefined) throw new Error("the edge's workerd could not be told apart");
  const agent = await startBenchAgent(edge.url, upstream.port);
  const heap = inspectorPort === undefined ? undefined : await heapReader(inspectorPort, "tollgate-bench");
  return {
    processes: [{ name: "workerd", pid: edge.pid }],
    small: { url: edge.url, host: LIMITED_HOST, path: "/" },
    tunnel: { id, url: edge.url, host: new URL(agent.publicUrl).host },
    heap: heap?.read,
    close: async () => {
      heap?.close();
      await agent.close();
      await edge.close();
    },
  };
}

interface LoadOutcome {
  readonly requests: number;
  readonly limited: number;
  readonly downloads: number;
  /** Small requests answered other than 200 or 429, or not answered (errors, timeouts); failed downloads and the first failure's message. */
  readonly smallFailures: number;
  readonly downloadFailures: number;
  readonly firstDownloadFailure?: string;
}

/** Small requests from `clients` addresses in turn, and `inFlight` download loops, for `loadSeconds`. */
async function load(target: Running): Promise<LoadOutcome> {
  let running = true;
  let downloads = 0;
  let failures = 0;
  let firstFailure: string | undefined;
  const tunnel = parts.has("tunnel") ? target.tunnel : undefined;
  const loops = tunnel
    ? Array.from({ length: inFlight }, async () => {
        while (running) {
          await transfer(tunnel, "download").then(
            () => downloads++,
            (error: Error) => {
              failures++;
              firstFailure ??= error.message;
            },
          );
        }
      })
    : [];
  let next = 0;
  const small = parts.has("limited")
    ? await autocannon({
        url: `${target.small.url}${target.small.path}`,
        connections,
        duration: loadSeconds,
        requests: [
          {
            setupRequest(request) {
              const client = next++ % clients;
              return { ...request, headers: { ...request.headers, host: target.small.host, "cf-connecting-ip": `10.0.${client >> 8}.${client & 255}` } };
            },
          },
        ],
      })
    : undefined;
  if (!small) await new Promise((resolve) => setTimeout(resolve, loadSeconds * 1000));
  running = false;
  await Promise.all(loops);
  const statuses = small?.statusCodeStats ?? {};
  const limited = statuses["429"]?.count ?? 0;
  const answered = Object.values(statuses).reduce((sum, { count = 0 }) => sum + count, 0);
  const unexpected = answered - limited - (statuses["200"]?.count ?? 0);
  return {
    requests: answered,
    limited,
    downloads,
    smallFailures: unexpected + (small ? small.errors + small.timeouts : 0),
    downloadFailures: failures,
    firstDownloadFailure: firstFailure,
  };
}

interface ProcessTrace {
  readonly name: string;
  /** Before the load; at its end; then one sample a second while idle. */
  readonly before: Memory;
  readonly after: Memory;
  readonly idle: Memory[];
  /** CPU seconds during the load, and in each idle second. */
  readonly loadCpu: number;
  readonly idleCpu: number[];
}

interface Trace {
  readonly id: string;
  readonly outcome: LoadOutcome;
  readonly processes: readonly ProcessTrace[];
  /** V8's heap before the load, after it, and after the idle time. */
  readonly heap?: readonly [Heap, Heap, Heap];
}

async function measure(id: string, upstream: { url: string; port: number }): Promise<Trace> {
  const target = await start(id, upstream);
  try {
    // Start-up settles (compilation, the agent's session) before the first reading.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const heapBefore = await target.heap?.();
    const traces = target.processes.map(({ name, pid }) => ({
      name,
      pid,
      before: memoryOf(pid)!,
      cpu: cpuSeconds(pid)!,
      idle: [] as Memory[],
      idleCpu: [] as number[],
    }));
    const outcome = await load(target);
    const heapAfter = await target.heap?.();
    const after = traces.map((t) => {
      const cpu = cpuSeconds(t.pid)!;
      const loadCpu = cpu - t.cpu;
      t.cpu = cpu;
      return { after: memoryOf(t.pid)!, loadCpu };
    });
    progress(
      `${id}: ${outcome.requests} small requests (${outcome.limited} answered 429, ${outcome.smallFailures} failed), ${outcome.downloads} downloads of 10 MiB ` +
        `(${outcome.downloadFailures} failed${outcome.firstDownloadFailure ? `, first: ${outcome.firstDownloadFailure}` : ""}); idle ${idleSeconds} s`,
    );
    for (let second = 0; second < idleSeconds; second++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      for (const t of traces) {
        const now = cpuSeconds(t.pid)!;
        t.idleCpu.push(now - t.cpu);
        t.cpu = now;
        t.idle.push(memoryOf(t.pid)!);
      }
    }
    const heapIdle = await target.heap?.();
    const heap = heapBefore && heapAfter && heapIdle ? ([heapBefore, heapAfter, heapIdle] as const) : undefined;
    return { id, outcome, heap, processes: traces.map((t, i) => ({ name: t.name, before: t.before, idle: t.idle, idleCpu: t.idleCpu, ...after[i]! })) };
  } finally {
    await target.close();
  }
}

const upstream = await startTunnelUpstream();
const traces: Trace[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    // Alternated: A B, then B A.
    for (const id of round % 2 === 0 ? targetIds : [...targetIds].reverse()) {
      progress(`round ${round + 1}/${rounds}: ${id}`);
      traces.push(await measure(id, upstream));
    }
  }
} finally {
  await upstream.close();
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
const percent = (seconds: readonly number[]) => ((seconds.reduce((a, b) => a + b, 0) / Math.max(1, seconds.length)) * 100).toFixed(1);
const rssAt = (trace: ProcessTrace, second: number) => trace.idle[Math.min(trace.idle.length, second) - 1]!;
const window = (trace: ProcessTrace, from: number, to: number) => percent(trace.idleCpu.slice(from, Math.min(to, trace.idleCpu.length)));
const lines = [
  `Idle after load — ${loadSeconds} s of load (${[...parts].join(" + ")}: ${connections} connections from ${clients} client addresses, ${inFlight} downloads of 10 MiB in flight), then ${idleSeconds} s idle; RSS and CPU`,
  `machine: ${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, load ${loadavg()[0]!.toFixed(2)}, Node ${process.version}`,
  "",
  "| target | process | requests (429) | downloads | RSS before MiB | after load | after 10 s idle | after idle (anon + file) | CPU % load | idle CPU % 0–10 s | 10–30 s | 30 s–end |",
  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...traces.flatMap(({ id, outcome, processes }) =>
    processes.map((t) => {
      const end = t.idle.at(-1)!;
      return (
        `| ${id} | ${t.name} | ${outcome.requests} (${outcome.limited}) | ${outcome.downloads} | ${mib(t.before.rss)} | ${mib(t.after.rss)} | ${mib(rssAt(t, 10).rss)} | ` +
        `${mib(end.rss)} (${mib(end.anon)} + ${mib(end.file)}) | ${((t.loadCpu / loadSeconds) * 100).toFixed(0)} | ${window(t, 0, 10)} | ${window(t, 10, 30)} | ${window(t, 30, idleSeconds)} |`
      );
    }),
  ),
  ...traces.flatMap(({ id, heap }) => {
    if (!heap) return [];
    const [before, after, idle] = heap.map((h) => `${mib(h.used)} of ${mib(h.total)} + ${mib(h.backingStores)}`);
    return [`${id}: V8 heap MiB, used of total + ArrayBuffer contents: before the load ${before}, after it ${after}, after idle ${idle}`];
  }),
  "",
  "Idle CPU per second (ms):",
  ...traces.flatMap(({ id, processes }) => processes.map((t) => `${id}, ${t.name}: ${t.idleCpu.map((s) => Math.round(s * 1000)).join(" ")}`)),
];
process.stdout.write(`${lines.join("\n")}\n`);
