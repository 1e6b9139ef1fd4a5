/**
 * The relay floor of bench:tunnel: bench/peer/relay-floor (a bare Worker, one Durable Object holding an
 * agent's WebSocket, a bare Node agent) in its own workerd and Node process. It relays as little as a relay
 * through this platform can, so the tunnel's ratios to it say what Tollgate adds, and its ratios to its own
 * origin fetch say what the platform's hops cost whoever builds the relay.
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
import { childProcesses } from "../shared/process-cpu.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Host that makes the floor Worker fetch the upstream itself instead of relaying. */
export const FLOOR_ORIGIN_HOST = "origin.floor";

export interface RelayFloor {
  readonly url: string;
  readonly edgePid: number | undefined;
  readonly agentPid: number | undefined;
  close(): Promise<void>;
}

export interface RelayFloorOptions {
  /** Opens workerd's inspector on this port (diagnostics only: an inspector costs throughput). */
  readonly inspectorPort?: number;
}

export async function startRelayFloor(upstreamUrl: string, upstreamPort: number, options: RelayFloorOptions = {}): Promise<RelayFloor> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-relay-floor-"));
  const script = await bundleWorker({ entry: join(ROOT, "bench/peer/relay-floor/worker.ts"), outdir: join(dir, "floor") });
  const before = new Set(childProcesses("workerd"));
  const host = await hostWorker({
    name: "relay-floor",
    wranglerConfig: join(ROOT, "bench/peer/relay-floor/wrangler.toml"),
    script,
    persistDir: join(dir, "state"),
    vars: { ORIGIN: upstreamUrl },
    ...(options.inspectorPort === undefined ? {} : { inspectorPort: options.inspectorPort }),
  });
  const started = childProcesses("workerd").filter((pid) => !before.has(pid));
  // The heap growth Tollgate's agent sets (src/agent/heap-growth.ts), as an option: the floor stays a bare agent.
  const agent = spawn(process.execPath, [HEAP_GROWING_FLAG, "--import", "tsx", join(ROOT, "bench/peer/relay-floor/agent.ts"), host.url, String(upstreamPort)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => agent.once("exit", () => resolve()));
  const close = async () => {
    agent.kill();
    await exited;
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the relay floor's agent did not connect within 30 s")), 30_000);
      agent.once("exit", (code) => reject(new Error(`the relay floor's agent exited (${code}) before connecting`)));
      createInterface({ input: agent.stdout! }).on("line", (line) => {
        if (line !== "ready") return;
        clearTimeout(timer);
        resolve();
      });
    });
  } catch (error) {
    await close();
    throw error;
  }
  return { url: host.url, edgePid: started.length === 1 ? started[0] : undefined, agentPid: agent.pid, close };
}
