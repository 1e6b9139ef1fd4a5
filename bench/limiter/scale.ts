/**
 * `npm run bench:scale`: per-client limits with many clients. In one workerd, a limit keyed by a request header
 * is loaded with K = 1 … 10,000 active keys (each touched one to five times before the measured run: see
 * `roundRobin`), then with every request a first touch (100,000 keys), then a flood (capacity 10 per 60 s) spread over 10,000 keys checked against the
 * exact oracle for every key. Each point is a ratio to the bare route measured just before and after it, with
 * object calls per request, requests passed uncounted and the workerd process's resident memory.
 *
 * The Worker's V8 heap is capped as Cloudflare caps an isolate's memory, `BENCH_HEAP_MB` (128; 0 for no cap):
 * `--max-heap-size` in workerd's V8 flags (bench/shared/v8-flags.ts), and the isolate's heap read through the
 * inspector after each point, as found and after a full collection. A heap past the cap aborts workerd ("V8
 * fatal error … heap out of memory"), so the bench also reports resets (that line, workerd gone, or the isolate's
 * counters going back), requests lost (any answer but 200 and 429, errors, timeouts, in every run) and counts lost.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { runKeyedLoad as runKeyed, type KeyedLoadResult } from "../shared/keyed-load.ts";
import { readIsolateHeap, sampleIsolateHeap, type IsolateHeap } from "../shared/isolate-heap.ts";
import { runLoad as runBareLoad } from "../shared/load.ts";
import { type ObservedAdmission, overAdmittedObserved } from "./oracle.ts";
import { memoryOf } from "../shared/process-cpu.ts";
import { FAIL_OPEN_MARKER } from "../gateway/stack.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker } from "../shared/workerd.ts";
import { QUIET_LEASE } from "../../src/limiter/bucket-memory.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const SECONDS = fromEnv("BENCH_DURATION", 5, { min: 1 });
const CONNECTIONS = fromEnv("BENCH_CONNECTIONS", 50, { min: 1 });
const IDLE_SECONDS = fromEnv("BENCH_IDLE_SECONDS", 75);
const FLOOD_KEYS = fromEnv("BENCH_FLOOD_KEYS", 10_000, { min: 1 });
const FLOOD_CAPACITY = 10;
const FLOOD_REQUESTS_PER_KEY = 15;
const WINDOW_MS = 60_000;
const HEADER = "x-client";
/** MB of V8 heap the Worker's isolate may have, as on Cloudflare; 0 runs it uncapped and reads no heap (a cap no
 * run reaches, e.g. 4096, reads the heap as V8 sizes it uncapped). */
const HEAP_MB = fromEnv("BENCH_HEAP_MB", 128);
/** What workerd writes when V8 reaches the heap limit, just before it aborts. */
const V8_FATAL = "V8 fatal error";
const ACTIVE_KEYS = (process.env.BENCH_KEYS ?? "1,100,1000,10000").split(",").map(Number);
/** Requests of a quiet key per object call: its own, and QUIET_LEASE leased. */
const CYCLE = 1 + QUIET_LEASE;
const progress = (message: string) => process.stderr.write(`· ${message}\n`);

function files(origin: string): Record<string, string> {
  const limit = (name: string, capacity: number) =>
    [
      "inbound:",
      "  - actions:",
      "      - type: rate-limit",
      "        config:",
      `          name: ${name}`,
      `          capacity: ${capacity}`,
      "          rate: 60s",
      `          bucket_key: ["req.headers['${HEADER}']"]`,
      "",
    ].join("\n");
  const route = (id: string, path: string, policy?: string) => [
    `      - id: edghtsrt_${id}`,
    `        match: ${path}`,
    `        upstream: ${origin}`,
    ...(policy ? [`        traffic_policy: ${policy}`] : []),
  ];
  const gateway = [
    "edges:",
    "  - id: edghts_scale",
    '    hostnames: ["127.0.0.1", "localhost"]',
    "    routes:",
    ...route("bare", "/bare"),
    ...route("keyed", "/keyed", "scale-keyed.yaml"),
    ...route("flood", "/flood", "scale-flood.yaml"),
    "",
  ];
  return {
    "policies/gateway.yaml": gateway.join("\n"),
    "policies/scale-keyed.yaml": limit("scale-keyed", 1_000_000),
    "policies/scale-flood.yaml": limit("scale-flood", FLOOD_CAPACITY),
  };
}

interface Point {
  readonly label: string;
  readonly ratio: number;
  readonly result: KeyedLoadResult;
  readonly bareP99: number;
  readonly callsPerRequest: number;
  readonly uncounted: number;
  readonly rssMiB: number;
  readonly heap: IsolateHeap | undefined;
}

const mib = (bytes: number) => bytes / 1024 / 1024;
const heapMiB = (heap: IsolateHeap | undefined) => (heap ? `${mib(heap.used).toFixed(1)} / ${mib(heap.usedAfterGc).toFixed(1)}` : "—");

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-scale-"));
  const upstream = await startUpstream();
  const script = await bundleWorker({ entry: join(ROOT, "src/worker.ts"), outdir: join(dir, "gateway"), policyFiles: files(upstream.origin) });
  const host = await hostWorker({
    name: "tollgate",
    wranglerConfig: join(ROOT, "wrangler.toml"),
    script,
    vars: { TOLLGATE_DEBUG_STATS: "1" },
    persistDir: join(dir, "state"),
    countLinesContaining: [FAIL_OPEN_MARKER, V8_FATAL],
    ...(HEAP_MB > 0 ? { v8Flags: [`--max-heap-size=${HEAP_MB}`], inspectorPort: 0 } : {}),
  });
  const rss = () => (host.pid === undefined ? Number.NaN : mib(memoryOf(host.pid)?.rss ?? Number.NaN));
  // Module state of the isolate: the requests its limiter has answered only grow (a carried take moves one from
  // objectCalls to takesCarried); if their sum goes back, the isolate (and its memory of buckets) is a new one.
  let lastAnswered = 0;
  let countersReset = 0;
  const calls = async () => {
    const stats = (await (await fetch(`${host.url}/__tollgate/stats`)).json()) as Record<
      "objectCalls" | "takesCarried" | "cachedRejections" | "leasedAdmissions",
      number
    >;
    const answered = stats.objectCalls + stats.takesCarried + stats.cachedRejections + stats.leasedAdmissions;
    if (answered < lastAnswered) countersReset++;
    lastAnswered = answered;
    return stats.objectCalls;
  };
  const heap = async () => (host.inspectorOrigin === undefined ? undefined : readIsolateHeap(host.inspectorOrigin, "tollgate", calls));
  const resets = () => host.linesContaining(V8_FATAL) + countersReset + (host.pid !== undefined && memoryOf(host.pid) === undefined ? 1 : 0);
  // A dead workerd answers nothing, so the loops below that wait for answered keys would never end.
  const stopIfReset = () => {
    if (resets() > 0) throw new Error(`the Worker's isolate was reset (${resets()} signs); workerd's last output:\n${host.recentOutput()}`);
  };
  // Every run's failures (answers other than 200 and 429, connection errors, timeouts), warm-ups and bare runs too.
  let lost = 0;
  const runLoad = async (...args: Parameters<typeof runBareLoad>) => {
    const result = await runBareLoad(...args);
    lost += result.failures;
    stopIfReset();
    return result;
  };
  const runKeyedLoad = async (...args: Parameters<typeof runKeyed>) => {
    const result = await runKeyed(...args);
    lost += result.failures;
    stopIfReset();
    if (result.requests === 0) throw new Error(`no answers from the Worker in ${args[1].durationSeconds} s; workerd's last output:\n${host.recentOutput()}`);
    return result;
  };
  const load = { connections: CONNECTIONS, durationSeconds: SECONDS, header: HEADER };
  const points: Point[] = [];
  let run = 0;
  try {
    await runLoad(`${host.url}/bare`, { connections: CONNECTIONS, durationSeconds: 1 });
    /** A measured keyed run between two bare runs. */
    const measure = async (
      label: string,
      path: string,
      nextKey: () => string,
      onAnswer?: (key: string, status: number, sent: number, answered: number) => void,
    ) => {
      const before = await runLoad(`${host.url}/bare`, { connections: CONNECTIONS, durationSeconds: SECONDS });
      const [callsBefore, failOpenBefore] = [await calls(), host.linesContaining(FAIL_OPEN_MARKER)];
      const result = await runKeyedLoad(`${host.url}${path}`, { ...load, nextKey, onAnswer });
      const [callsAfter, failOpenAfter] = [await calls(), host.linesContaining(FAIL_OPEN_MARKER)];
      const after = await runLoad(`${host.url}/bare`, { connections: CONNECTIONS, durationSeconds: SECONDS });
      const bare = (before.requestsPerSecond + after.requestsPerSecond) / 2;
      const point = {
        label,
        ratio: result.requestsPerSecond / bare,
        result,
        bareP99: (before.p99 + after.p99) / 2,
        callsPerRequest: (callsAfter - callsBefore) / Math.max(1, result.requests),
        uncounted: failOpenAfter - failOpenBefore,
        rssMiB: rss(),
        heap: await heap(),
      };
      points.push(point);
      progress(
        `${label}: ${point.ratio.toFixed(2)} × bare, ${result.requestsPerSecond.toFixed(0)} req/s, ${point.callsPerRequest.toFixed(3)} calls/request, ${point.uncounted} uncounted, RSS ${point.rssMiB.toFixed(0)} MiB, heap ${heapMiB(point.heap)} MiB (after GC)`,
      );
      return point;
    };
    /**
     * Round-robin over `count` keys of this run. Before the measured run, key k is touched 1 + (k mod CYCLE) times:
     * a quiet key calls its object once in CYCLE requests (one request and QUIET_LEASE leased), so the measured run
     * starts with the keys spread evenly over that cycle, as they are in a steady state, not all holding a fresh lease.
     */
    const roundRobin = async (count: number) => {
      const prefix = `k${run++}-`;
      const warmUp: number[] = [];
      for (let pass = 0; pass < CYCLE; pass++) for (let key = 0; key < count; key++) if (key % CYCLE >= pass) warmUp.push(key);
      let touched = 0;
      const warmKey = () => `${prefix}${warmUp[touched++ % warmUp.length]}`;
      while (touched < warmUp.length) await runKeyedLoad(`${host.url}/keyed`, { ...load, durationSeconds: 2, nextKey: warmKey });
      let next = 0;
      return () => `${prefix}${next++ % count}`;
    };
    for (const keys of ACTIVE_KEYS) await measure(`${keys.toLocaleString("en")} active keys`, "/keyed", await roundRobin(keys));

    const rssBeforeFirstTouch = rss();
    let fresh = 0;
    const firstTouch = await measure("every request a first touch", "/keyed", () => `fresh-${fresh++}`);
    const rssPer10k = ((firstTouch.rssMiB - rssBeforeFirstTouch) / Math.max(1, firstTouch.result.requests)) * 10_000;
    // The point above makes a few thousand buckets, so its growth is scaled up from a short run, whose first heap
    // growth it includes. Here 10,000 more are made and the growth read over exactly them.
    progress("10,000 more new buckets, for the process's memory growth over them");
    const rssBeforeTenThousand = rss();
    const heapBeforeTenThousand = await heap();
    // No throughput is measured here, so a DevTools session may stay attached to catch the heap's highest use.
    const sampler = host.inspectorOrigin === undefined ? undefined : await sampleIsolateHeap(host.inspectorOrigin, "tollgate", 250);
    let made = 0;
    const newBucket = () => `rss-${made++}`;
    while (made < 10_000) await runKeyedLoad(`${host.url}/keyed`, { ...load, durationSeconds: 2, nextKey: newBucket });
    const heapHighestMaking = (await sampler?.stop()) ?? Number.NaN;
    const rssPer10kMeasured = ((rss() - rssBeforeTenThousand) / made) * 10_000;
    const heapAfterTenThousand = await heap();
    const heapPer10k =
      heapBeforeTenThousand && heapAfterTenThousand ? (mib(heapAfterTenThousand.usedAfterGc - heapBeforeTenThousand.usedAfterGc) / made) * 10_000 : Number.NaN;

    progress(`flood over ${FLOOD_KEYS.toLocaleString("en")} keys, capacity ${FLOOD_CAPACITY} per 60 s, ${FLOOD_REQUESTS_PER_KEY} requests a key`);
    const admissions = new Map<string, ObservedAdmission[]>();
    const record = (key: string, status: number, sent: number, answered: number) => {
      if (status !== 200) return;
      const list = admissions.get(key) ?? [];
      list.push({ sent, answered });
      admissions.set(key, list);
    };
    // Each key's requests come together, as from a client hammering one key after another: every key is pushed
    // past its capacity within its window, whatever the machine's speed (round robin over 10,000 keys would need
    // 1,667 admissions a second to limit any of them).
    let floodNext = 0;
    const floodKey = () => `flood-${Math.floor(floodNext++ / FLOOD_REQUESTS_PER_KEY) % FLOOD_KEYS}`;
    const floodRuns: KeyedLoadResult[] = [];
    const floodBare = [await runLoad(`${host.url}/bare`, { connections: CONNECTIONS, durationSeconds: SECONDS })];
    const floodFailOpen = host.linesContaining(FAIL_OPEN_MARKER);
    const floodCalls = await calls();
    while (floodNext < FLOOD_KEYS * FLOOD_REQUESTS_PER_KEY)
      floodRuns.push(await runKeyedLoad(`${host.url}/flood`, { ...load, nextKey: floodKey, onAnswer: record }));
    const floodCallsAfter = await calls();
    floodBare.push(await runLoad(`${host.url}/bare`, { connections: CONNECTIONS, durationSeconds: SECONDS }));
    const floodRequests = floodRuns.reduce((sum, run) => sum + run.requests, 0);
    const floodRate = floodRuns.reduce((sum, run) => sum + run.requestsPerSecond, 0) / floodRuns.length;
    const flood = {
      ratio: floodRate / ((floodBare[0]!.requestsPerSecond + floodBare[1]!.requestsPerSecond) / 2),
      limited: floodRuns.reduce((sum, run) => sum + run.limited, 0),
      requests: floodRequests,
      callsPerRequest: (floodCallsAfter - floodCalls) / Math.max(1, floodRequests),
      uncounted: host.linesContaining(FAIL_OPEN_MARKER) - floodFailOpen,
    };
    let over = 0;
    let admitted = 0;
    for (const list of admissions.values()) {
      admitted += list.length;
      over += overAdmittedObserved(list, FLOOD_CAPACITY, WINDOW_MS);
    }

    const heapAfterFlood = await heap();
    progress(`idle ${IDLE_SECONDS} s (buckets expire after their window)`);
    const rssBeforeIdle = rss();
    await sleep(IDLE_SECONDS * 1000);
    const rssAfterIdle = rss();
    const heapAfterIdle = await heap();
    const heapLine =
      HEAP_MB > 0
        ? `Isolate heap (--max-heap-size=${HEAP_MB} in workerd's V8 flags; MiB used as found / after a full GC): per 10,000 new buckets ${heapPer10k.toFixed(2)} MiB (${heapMiB(heapBeforeTenThousand)} → ${heapMiB(heapAfterTenThousand)}; highest in use while they were made, read every 250 ms: ${mib(heapHighestMaking).toFixed(1)}), after the flood ${heapMiB(heapAfterFlood)}, after idle ${heapMiB(heapAfterIdle)}; ArrayBuffer contents outside the heap after the flood ${mib(heapAfterFlood?.backingStores ?? Number.NaN).toFixed(1)}`
        : "Isolate heap: no cap (BENCH_HEAP_MB=0), not read";

    const lines = [
      "",
      `Scale bench: ${CONNECTIONS} connections × ${SECONDS} s per run; each point's ratio is to the bare route measured just before and after it.`,
      "",
      "| point | × bare | req/s | p99 − bare (ms) | object calls / request | uncounted | 429s | workerd RSS (MiB) | isolate heap, found / after GC (MiB) |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...points.map(
        (p) =>
          `| ${p.label} | ${p.ratio.toFixed(2)} | ${p.result.requestsPerSecond.toFixed(0)} | ${(p.result.p99 - p.bareP99).toFixed(0)} | ${p.callsPerRequest.toFixed(3)} | ${p.uncounted} | ${p.result.limited} | ${p.rssMiB.toFixed(0)} | ${heapMiB(p.heap)} |`,
      ),
      "",
      `RSS growth per 10,000 new buckets: ${rssPer10kMeasured.toFixed(1)} MiB over ${made.toLocaleString("en")} made in a row (scaled from the first-touch point's short run: ${rssPer10k.toFixed(1)} MiB)`,
      `Flood over ${admissions.size.toLocaleString("en")} keys (${FLOOD_REQUESTS_PER_KEY} requests a key): ${flood.ratio.toFixed(2)} × bare, ${flood.requests} requests, ${flood.limited} answered 429, ${admitted} admitted, ${over} certainly over capacity (oracle, every key), ${flood.callsPerRequest.toFixed(3)} object calls/request, ${flood.uncounted} uncounted`,
      `Idle ${IDLE_SECONDS} s: RSS ${rssBeforeIdle.toFixed(0)} → ${rssAfterIdle.toFixed(0)} MiB`,
      heapLine,
      `Isolate resets: ${resets()} (V8 fatal lines ${host.linesContaining(V8_FATAL)}, counters gone back ${countersReset}, workerd ${host.pid !== undefined && memoryOf(host.pid) === undefined ? "gone" : "alive"}); requests lost: ${lost} (every run, warm-ups and bare runs included); counts lost: ${points.reduce((sum, p) => sum + p.uncounted, 0) + flood.uncounted} uncounted, ${over} certainly over capacity (oracle)`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    if (flood.uncounted > 0 || lost > 0 || resets() > 0 || points.some((p) => p.uncounted > 0))
      process.stderr.write(`gateway output:\n${host.recentOutput()}\n`);
    if (lost > 0 || resets() > 0) process.exitCode = 1;
  } finally {
    await host.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
