/**
 * Everything the bench measures, started side by side: the local upstream, the gateway bundled with
 * the bench's policy files, the hono-rate-limiter peer, the rate-limit binding peer and the fixed-429
 * Worker, each Worker in its own workerd.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { benchPolicyFiles, LIMITS } from "./gateway-files.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker, type WorkerHost } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");

/** What src/gateway/limiter-client.ts logs when counting fails and the request proceeds uncounted. */
export const FAIL_OPEN_MARKER = "rate-limit: counting failed";

export interface BenchStack {
  readonly origin: string;
  readonly gateway: WorkerHost;
  readonly peer: WorkerHost;
  /** The Workers rate-limit binding (`[[ratelimits]]`, Miniflare's local simulation). */
  readonly bindingPeer: WorkerHost;
  /** Answers a fixed 429 and nothing else: the ceiling of any flood path. */
  readonly fixed429: WorkerHost;
  close(): Promise<void>;
}

export async function startStack(): Promise<BenchStack> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-bench-"));
  const closers: Array<() => Promise<void>> = [async () => rmSync(dir, { recursive: true, force: true })];
  const close = async () => {
    for (const closeOne of closers.reverse()) await closeOne().catch(() => {});
  };
  try {
    const upstream = await startUpstream();
    closers.push(() => upstream.close());
    const [gatewayScript, peerScript, bindingScript, fixedScript] = await Promise.all([
      bundleWorker({ entry: join(ROOT, "src/worker.ts"), outdir: join(dir, "gateway"), policyFiles: benchPolicyFiles(upstream.origin) }),
      bundleWorker({ entry: join(ROOT, "bench/peer/worker.ts"), outdir: join(dir, "peer") }),
      bundleWorker({ entry: join(ROOT, "bench/peer/binding/worker.ts"), outdir: join(dir, "binding") }),
      bundleWorker({ entry: join(ROOT, "bench/peer/fixed-429/worker.ts"), outdir: join(dir, "fixed-429") }),
    ]);
    const gateway = await hostWorker({
      name: "tollgate",
      wranglerConfig: join(ROOT, "wrangler.toml"),
      script: gatewayScript,
      vars: { TOLLGATE_DEBUG_STATS: "1" },
      persistDir: join(dir, "gateway-state"),
      countLinesContaining: [FAIL_OPEN_MARKER],
    });
    closers.push(() => gateway.close());
    const peer = await hostWorker({
      name: "peer",
      wranglerConfig: join(ROOT, "bench/peer/wrangler.toml"),
      script: peerScript,
      vars: {
        ORIGIN: upstream.origin,
        ALLOWED_LIMIT: String(LIMITS.allowed.capacity),
        FLOOD_LIMIT: String(LIMITS.flood.capacity),
        WINDOW_MS: String(LIMITS.flood.windowMs),
      },
      persistDir: join(dir, "peer-state"),
    });
    closers.push(() => peer.close());
    const bindingPeer = await hostWorker({
      name: "binding-peer",
      wranglerConfig: join(ROOT, "bench/peer/binding/wrangler.toml"),
      script: bindingScript,
      vars: { ORIGIN: upstream.origin },
      persistDir: join(dir, "binding-state"),
    });
    closers.push(() => bindingPeer.close());
    const fixed429 = await hostWorker({
      name: "fixed-429",
      wranglerConfig: join(ROOT, "bench/peer/fixed-429/wrangler.toml"),
      script: fixedScript,
      persistDir: join(dir, "fixed-429-state"),
    });
    closers.push(() => fixed429.close());
    return { origin: upstream.origin, gateway, peer, bindingPeer, fixed429, close };
  } catch (error) {
    await close();
    throw error;
  }
}
