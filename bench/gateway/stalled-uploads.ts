/**
 * `npm run bench:stalled-uploads`: what stalled uploads cost an isolate. In one workerd, 250 anonymous clients
 * each send just under 1 MiB of a chunked body and then nothing, first to a route without a policy, then to a
 * route whose policy verifies a GitHub webhook (which reads the body whole before judging it). Printed: workerd's
 * RSS growth in each phase, how the uploads were answered (503: refused by the isolate's body budget), whether a
 * signed webhook is served while they stall, and how long after the clients vanish one is served again.
 * BENCH_WORKER_ENTRY bundles another entry (an older checkout's src/worker.ts) for a before-and-after.
 */

import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request, type ClientRequest } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { bundleWorker } from "../shared/bundle.ts";
import { fromEnv } from "../shared/config.ts";
import { localEdgeYaml } from "../shared/local-edge.ts";
import { memoryOf } from "../shared/process-cpu.ts";
import { startUpstream } from "../shared/upstream.ts";
import { hostWorker, type WorkerHost } from "../shared/workerd.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const UPLOADS = fromEnv("BENCH_UPLOADS", 250, { min: 1 });
/** Just under the 1 MiB a verify-webhook reads (MAX_READ_BODY_BYTES), so each upload is held, never refused as too large. */
const UPLOAD_BYTES = 1024 * 1024 - 1024;
const CHUNK_BYTES = 64 * 1024;
/** How long the uploads stall before memory is sampled. */
const STALL_MS = 4_000;
const SECRET = "bench-secret";
const ENTRY = process.env.BENCH_WORKER_ENTRY ? resolve(process.env.BENCH_WORKER_ENTRY) : join(ROOT, "src/worker.ts");

function files(origin: string): Record<string, string> {
  const gateway = localEdgeYaml("edgstall_bench", origin, [
    { id: "edgstallrt_plain", match: "/plain" },
    { id: "edgstallrt_hook", match: "/hook", policy: "bench-hook.yaml" },
  ]);
  const hook = `on_http_request:\n  - actions:\n      - type: verify-webhook\n        config: { provider: github, secret: ${SECRET} }\n`;
  return { "policies/gateway.yaml": gateway, "policies/bench-hook.yaml": hook };
}

/** 8 KiB: a GitHub push event's size, more than the 4 KiB four stalled uploads leave of the operator's 4 MiB. */
const SIGNED_BODY = JSON.stringify({ zen: "x".repeat(8 * 1024) });

/** A signed webhook's status: 200 when the gateway read, verified and sent it on. */
async function signedHook(host: WorkerHost): Promise<number> {
  const body = SIGNED_BODY;
  const signature = `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;
  const response = await fetch(`${host.url}/hook/push`, { method: "POST", headers: { "x-hub-signature-256": signature }, body });
  await response.arrayBuffer();
  return response.status;
}

interface Stalled {
  readonly requests: ClientRequest[];
  /** Statuses answered so far, by status. */
  readonly answered: Map<number, number>;
}

/** `count` uploads to `path` that send UPLOAD_BYTES of a chunked body and then stall until destroyed. */
function stallUploads(host: WorkerHost, path: string, count: number): Stalled {
  const url = new URL(path, host.url);
  const answered = new Map<number, number>();
  const chunk = Buffer.alloc(CHUNK_BYTES, 0x61);
  const requests = Array.from({ length: count }, () => {
    const upload = request(url, { method: "POST", agent: false, headers: { "x-hub-signature-256": `sha256=${"0".repeat(64)}` } });
    upload.on("response", (response) => {
      answered.set(response.statusCode ?? 0, (answered.get(response.statusCode ?? 0) ?? 0) + 1);
      response.resume();
    });
    upload.on("error", () => {});
    for (let sent = 0; sent < UPLOAD_BYTES; sent += CHUNK_BYTES)
      upload.write(sent + CHUNK_BYTES <= UPLOAD_BYTES ? chunk : chunk.subarray(0, UPLOAD_BYTES - sent));
    return upload;
  });
  return { requests, answered };
}

const MIB = 1024 * 1024;
const rssOf = (host: WorkerHost) => (host.pid === undefined ? Number.NaN : (memoryOf(host.pid)?.rss ?? Number.NaN));

interface Phase {
  readonly path: string;
  readonly before: number;
  readonly peak: number;
  readonly answered: Map<number, number>;
  /** A signed webhook's status while the uploads stall. */
  readonly signedWhileStalled: number;
  /** Milliseconds from destroying the uploads to a signed webhook served again. */
  readonly recoveredMs: number | undefined;
}

async function phase(host: WorkerHost, path: string): Promise<Phase> {
  const before = rssOf(host);
  const stalled = stallUploads(host, path, UPLOADS);
  let peak = before;
  for (let waited = 0; waited < STALL_MS; waited += 250) {
    await sleep(250);
    peak = Math.max(peak, rssOf(host));
  }
  const signedWhileStalled = await signedHook(host);
  for (const upload of stalled.requests) upload.destroy();
  const gone = Date.now();
  let recoveredMs: number | undefined;
  // A hold whose invocation was cancelled comes back at the latest after three read idle times (30 s).
  while (Date.now() - gone < 40_000) {
    if ((await signedHook(host)) === 200) {
      recoveredMs = Date.now() - gone;
      break;
    }
    await sleep(250);
  }
  await sleep(1_000);
  return { path, before, peak, answered: new Map(stalled.answered), signedWhileStalled, recoveredMs };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-stalled-"));
  const upstream = await startUpstream();
  const script = await bundleWorker({ entry: ENTRY, outdir: join(dir, "gateway"), policyFiles: files(upstream.origin) });
  const host = await hostWorker({ name: "tollgate", wranglerConfig: join(ROOT, "wrangler.toml"), script, persistDir: join(dir, "state") });
  const phases: Phase[] = [];
  try {
    for (let warm = 0; warm < 20; warm++) await signedHook(host);
    phases.push(await phase(host, "/plain/upload"));
    phases.push(await phase(host, "/hook/upload"));
  } finally {
    await host.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`stalled uploads bench: ${UPLOADS} chunked uploads of ${UPLOAD_BYTES} bytes each, stalled ${STALL_MS / 1000} s; worker ${ENTRY}`);
  console.log(
    "| route | workerd RSS before → peak (MiB) | growth (MiB) | uploads answered while stalled | signed webhook meanwhile | served again after the clients left |",
  );
  console.log("|---|---:|---:|---|---:|---:|");
  for (const result of phases) {
    const answered = [...result.answered].map(([status, count]) => `${count} × ${status}`).join(", ") || "none";
    const recovered = result.recoveredMs === undefined ? "not within 40 s" : `${(result.recoveredMs / 1000).toFixed(1)} s`;
    console.log(
      `| ${result.path} | ${(result.before / MIB).toFixed(0)} → ${(result.peak / MIB).toFixed(0)} | ${((result.peak - result.before) / MIB).toFixed(0)} | ${answered} | ${result.signedWhileStalled} | ${recovered} |`,
    );
  }
}

await main();
