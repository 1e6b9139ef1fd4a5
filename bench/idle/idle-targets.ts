/**
 * The targets bench/idle/idle-after-load.ts loads, and what it reads them with: Tollgate's edge with a rate-limited
 * host, Tollgate as `npm start` runs it (wrangler dev), the hono-rate-limiter peer, and V8's heap through
 * workerd's inspector.
 */

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { inspector } from "../shared/cpu-profile.ts";
import { descendants } from "../shared/process-cpu.ts";
import { startBenchAgent } from "../tunnel/tunnel-agent.ts";
import type { TransferTarget } from "../tunnel/tunnel-transfer.ts";
import { hostWorker } from "../shared/workerd.ts";

/** The rate-limited host of Tollgate's edge: 10 requests a minute per client address. */
export const LIMITED_HOST = "limited.bench";
export const LIMITED_EDGE = [
  "  - id: edghts_limited",
  `    hostnames: ["${LIMITED_HOST}"]`,
  "    routes:",
  "      - id: edghtsrt_limited",
  "        match: /",
  "        upstream: ORIGIN",
  "        traffic_policy: bench-idle-limited.yaml",
];
export const LIMITED_POLICY = [
  "inbound:",
  "  - actions:",
  "      - type: rate-limit",
  "        config:",
  "          name: bench-idle",
  "          algorithm: sliding_window",
  "          capacity: 10",
  "          rate: 60s",
  "          bucket_key:",
  '            - "conn.client_ip"',
  "",
].join("\n");

export interface Watched {
  readonly name: string;
  readonly pid: number;
}

/** A target under test: where the load goes, and the processes to watch (the Worker's workerd first). */
export interface Running {
  readonly processes: readonly Watched[];
  /** Small requests: Tollgate's rate-limited route; the floor's bare pass-through. */
  readonly small: { readonly url: string; readonly host: string; readonly path: string };
  /** V8's heap of the Worker's isolate (BENCH_IDLE_HEAP). */
  readonly heap?: () => Promise<Heap>;
  /** Where downloads go; none for the peer. */
  readonly tunnel?: TransferTarget;
  close(): Promise<void>;
}

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface Heap {
  readonly used: number;
  readonly total: number;
  /** ArrayBuffer contents, which live outside V8's heap. */
  readonly backingStores: number;
}

/** Reads V8's heap through workerd's inspector on `port` (the target whose name contains `worker`). */
export async function heapReader(port: number, worker: string): Promise<{ read: () => Promise<Heap>; close: () => void }> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const cdp = await inspector((targets.find((t) => t.webSocketDebuggerUrl.includes(worker)) ?? targets[0]!).webSocketDebuggerUrl);
  return {
    async read() {
      const heap = await cdp.send<{ usedSize: number; totalSize: number; backingStorageSize?: number }>("Runtime.getHeapUsage");
      return { used: heap.usedSize, total: heap.totalSize, backingStores: heap.backingStorageSize ?? Number.NaN };
    },
    close: () => cdp.close(),
  };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Tollgate as `npm start` runs it; the Worker's workerd is the one not listening on the public port. */
export async function startWrangler(upstream: { url: string; port: number }): Promise<Running> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "tollgate-idle-wrangler-"));
  const args = ["scripts/start-dev.mjs", "--port", String(port), "--inspector-port", String(await freePort()), "--persist-to", join(dir, "state")];
  const child = spawn(process.execPath, [...args, "--show-interactive-dev-session=false"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const output: string[] = [];
  const keep = (chunk: Buffer) => output.push(...chunk.toString().split("\n")) > 200 && output.splice(0, output.length - 200);
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let attempt = 0; ; attempt++) {
      if (child.exitCode !== null || attempt > 300) throw new Error(`wrangler dev did not answer:\n${output.join("\n")}`);
      if (
        await fetch(`${url}/`, { signal: AbortSignal.timeout(2000) }).then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const tree = descendants(child.pid!);
    const workerds = tree.filter(({ name }) => name === "workerd");
    const proxy = workerds.find(({ cmdline }) => cmdline.includes(`entry=127.0.0.1:${port}`));
    const worker = workerds.find((w) => w !== proxy);
    const cli = tree.find(({ name, cmdline }) => name !== "workerd" && cmdline.includes("wrangler-dist/cli.js"));
    if (!proxy || !worker || !cli) throw new Error(`wrangler dev's processes could not be told apart: ${tree.map((p) => `${p.pid} ${p.name}`).join(", ")}`);
    const agent = await startBenchAgent(url, upstream.port);
    return {
      processes: [
        { name: "Worker's workerd", pid: worker.pid },
        { name: "proxy workerd", pid: proxy.pid },
        { name: "wrangler (Node)", pid: cli.pid },
      ],
      small: { url, host: "127.0.0.1", path: "/demo" },
      tunnel: { id: "wrangler", url, host: new URL(agent.publicUrl).host },
      close: async () => {
        await agent.close();
        await stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** hono-rate-limiter and its Durable Object store, 10 requests a minute per client on /flood, as bench:run serves it. */
export async function startPeer(upstream: { url: string }): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-idle-peer-"));
  const script = await bundleWorker({ entry: join(ROOT, "bench/peer/worker.ts"), outdir: join(dir, "peer") });
  const host = await hostWorker({
    name: "peer",
    wranglerConfig: join(ROOT, "bench/peer/wrangler.toml"),
    script,
    vars: { ORIGIN: upstream.url, ALLOWED_LIMIT: "2000000000", FLOOD_LIMIT: "10", WINDOW_MS: "60000" },
    persistDir: join(dir, "state"),
  });
  if (host.pid === undefined) throw new Error("the peer's workerd could not be told apart");
  return {
    processes: [{ name: "workerd", pid: host.pid }],
    small: { url: host.url, host: new URL(host.url).host, path: "/flood" },
    close: async () => {
      await host.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
