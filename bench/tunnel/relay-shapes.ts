/**
 * `npm run bench:relay-shapes`: 10 MiB downloads and uploads through relay shapes on this platform, as ratios to
 * the same Worker fetching the local service itself. The shapes (bench/peer/relay-shapes/worker.ts) move large
 * bodies as HTTP bodies between the agent and the object; the relay floor (bench/peer/relay-floor) moves them as
 * WebSocket messages; Tollgate's tunnel sends large response bodies the first way (protocol.ts, "Body
 * channels") and everything else the second. ROUNDS (5) alternated rounds of 3 transfers per target; DIRS
 * (download,upload). Medians.
 */

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { HEAP_GROWING_FLAG } from "../../src/agent/heap-growth.ts";
import { bundleWorker } from "../shared/bundle.ts";
import { hostWorker } from "../shared/workerd.ts";
import { startTunnelUpstream } from "./tunnel-upstream.ts";
import { FLOOR_ORIGIN_HOST, startRelayFloor } from "./tunnel-floor.ts";
import { transfer, type Direction, type TransferTarget } from "./tunnel-transfer.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const rounds = Number(process.env.ROUNDS ?? 5);
const directions = (process.env.DIRS ?? "download,upload").split(",") as Direction[];

const upstream = await startTunnelUpstream();
const floor = await startRelayFloor(upstream.url, upstream.port);
const dir = mkdtempSync(join(tmpdir(), "tollgate-relay-shapes-"));
const script = await bundleWorker({ entry: join(ROOT, "bench/peer/relay-shapes/worker.ts"), outdir: join(dir, "worker") });
const host = await hostWorker({
  name: "relay-shapes",
  wranglerConfig: join(ROOT, "bench/peer/relay-shapes/wrangler.toml"),
  script,
  persistDir: join(dir, "state"),
  vars: { ORIGIN: upstream.url },
});
// The heap growth Tollgate's agent sets (src/agent/heap-growth.ts), as an option: the peer stays a bare agent.
const agent = spawn(process.execPath, [HEAP_GROWING_FLAG, "--import", "tsx", join(ROOT, "bench/peer/relay-shapes/agent.ts"), host.url, String(upstream.port)], {
  stdio: ["ignore", "pipe", "inherit"],
});
await new Promise<void>((resolve, reject) => {
  agent.once("exit", (code) => reject(new Error(`the relay-shapes agent exited (${code}) before connecting`)));
  createInterface({ input: agent.stdout! }).on("line", (line) => line === "ready" && resolve());
});

const targets: TransferTarget[] = [
  { id: "origin fetch", url: host.url, host: "origin.shapes" },
  { id: "one object hop", url: host.url, host: "do.shapes" },
  { id: "HTTP bodies, identity stream", url: host.url, host: "http.shapes" },
  { id: "HTTP bodies, fixed-length stream", url: host.url, host: "fixed.shapes" },
  { id: "relay floor (WebSocket messages)", url: floor.url },
  { id: "relay floor's origin fetch", url: floor.url, host: FLOOR_ORIGIN_HOST },
];
const rates = new Map<string, number[]>();
for (let round = 0; round < rounds; round++) {
  for (const direction of directions) {
    for (const target of targets) {
      for (let i = 0; i < 3; i++) {
        const key = `${direction}\u0000${target.id}`;
        rates.set(key, [...(rates.get(key) ?? []), await transfer(target, direction)]);
      }
    }
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
process.stdout.write(`Relay shapes — ${rounds} alternated rounds × 3 transfers of 10 MiB per target and direction; medians\n\n`);
process.stdout.write("| direction | path | MB/s | ÷ origin fetch |\n|---|---|---:|---:|\n");
for (const direction of directions) {
  const base = median(rates.get(`${direction}\u0000origin fetch`)!);
  for (const target of targets) {
    const rate = median(rates.get(`${direction}\u0000${target.id}`)!);
    process.stdout.write(`| ${direction} | ${target.id} | ${rate.toFixed(0)} | ${(rate / base).toFixed(2)} × |\n`);
  }
}
agent.kill();
await host.close();
await floor.close();
await upstream.close();
rmSync(dir, { recursive: true, force: true });
