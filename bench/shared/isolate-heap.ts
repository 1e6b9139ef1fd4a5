/**
 * The V8 heap of one Worker's isolate (not the process's RSS), read through workerd's inspector: used and total
 * as they are, then used after a full collection. Each reading opens its own DevTools session and closes it, so
 * no session stays attached to slow the Worker between readings. workerd runs the collection V8's inspector posts
 * only when the isolate next takes a request (measured: `HeapProfiler.collectGarbage` unanswered for 3 s on an idle
 * Worker, answered at the next request a second later), so the reading sends requests until it is done.
 */

import { setTimeout as sleep } from "node:timers/promises";

import { inspector } from "./cpu-profile.ts";

export interface IsolateHeap {
  /** Bytes of V8 heap in use, as found. */
  readonly used: number;
  /** Bytes of V8 heap in use after `HeapProfiler.collectGarbage`: what is live. */
  readonly usedAfterGc: number;
  /** Bytes V8 has reserved for the heap after that collection. */
  readonly total: number;
  /** ArrayBuffer contents, which live outside V8's heap (NaN when workerd does not say). */
  readonly backingStores: number;
}

interface HeapUsage {
  usedSize: number;
  totalSize: number;
  backingStorageSize?: number;
}

const NUDGE_MS = 100;

/** The DevTools WebSocket URL of the isolate whose inspector target names `worker`. */
async function targetOf(inspectorOrigin: string, worker: string): Promise<string> {
  const targets = (await (await fetch(`${inspectorOrigin}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const target = targets.find((t) => t.webSocketDebuggerUrl.endsWith(`core:user:${worker}`));
  if (!target) throw new Error(`no inspector target for ${worker} among ${targets.map((t) => t.webSocketDebuggerUrl).join(", ")}`);
  return target.webSocketDebuggerUrl;
}
const GC_TIMEOUT_MS = 10_000;

/**
 * Reads the heap of the isolate whose inspector target names `worker` (Miniflare calls it `core:user:<name>`);
 * `nudge` sends the Worker one cheap request.
 */
export async function readIsolateHeap(inspectorOrigin: string, worker: string, nudge: () => Promise<unknown>): Promise<IsolateHeap> {
  const cdp = await inspector(await targetOf(inspectorOrigin, worker));
  try {
    const before = await cdp.send<HeapUsage>("Runtime.getHeapUsage");
    let collected = false;
    const collection = cdp.send("HeapProfiler.collectGarbage").then(() => {
      collected = true;
    });
    for (const start = Date.now(); !collected; await sleep(NUDGE_MS)) {
      if (Date.now() - start > GC_TIMEOUT_MS) throw new Error(`${worker}: the inspector's garbage collection did not end in ${GC_TIMEOUT_MS} ms`);
      await nudge();
    }
    await collection;
    const after = await cdp.send<HeapUsage>("Runtime.getHeapUsage");
    return { used: before.usedSize, usedAfterGc: after.usedSize, total: after.totalSize, backingStores: after.backingStorageSize ?? Number.NaN };
  } finally {
    cdp.close();
  }
}

/**
 * Reads the isolate's heap in use every `everyMs` over one DevTools session until `stop`, which answers the highest
 * reading in bytes. The session stays attached meanwhile: use it where no throughput is measured.
 */
export async function sampleIsolateHeap(inspectorOrigin: string, worker: string, everyMs: number): Promise<{ stop: () => Promise<number> }> {
  const cdp = await inspector(await targetOf(inspectorOrigin, worker));
  let highest = 0;
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      highest = Math.max(highest, (await cdp.send<HeapUsage>("Runtime.getHeapUsage")).usedSize);
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      sampling = false;
      await loop;
      cdp.close();
      return highest;
    },
  };
}
