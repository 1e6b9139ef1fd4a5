/**
 * Serves one bundled Worker from its own workerd through the Miniflare API: bindings taken from a
 * wrangler config (as `wrangler dev` would), logging quiet, no request log, no inspector unless asked,
 * SQLite-backed Durable Objects persisted to a directory, V8 flags if given. Not `wrangler dev`: see BENCH.md.
 * `BENCH_V8_FLAGS` (space-separated, e.g. `--max-heap-size=128`) gives V8 flags to every bench's workerd that sets
 * none itself; workerd aborting on a V8 fatal error (a heap past its cap) is always written to stderr.
 */

import { copyFileSync, mkdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { Miniflare, NoOpLog } from "miniflare";
import { childProcesses, cpuSeconds } from "./process-cpu.ts";
import { withV8Flags } from "./v8-flags.ts";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

export interface WorkerHost {
  /** Base URL of the Worker, e.g. http://127.0.0.1:41234 */
  readonly url: string;
  /** CPU seconds the workerd process has used so far (Linux), or undefined. */
  cpuSeconds(): number | undefined;
  /** The workerd process's id (Linux), or undefined when it could not be told apart. */
  readonly pid: number | undefined;
  /** http://127.0.0.1:<port> of workerd's inspector (its /json/list names the targets), when one was asked for. */
  readonly inspectorOrigin: string | undefined;
  /** The last lines workerd wrote (console output of the Worker), repeats folded, for diagnostics. */
  recentOutput(): string;
  /** How many lines written so far contain `marker` (one of HostOptions.countLinesContaining). */
  linesContaining(marker: string): number;
  close(): Promise<void>;
}

export interface HostOptions {
  readonly name: string;
  /** wrangler.toml whose bindings, vars, Durable Objects and compatibility settings the Worker gets. */
  readonly wranglerConfig: string;
  /** The bundled module. */
  readonly script: string;
  /** Vars added to (or replacing) those of the wrangler config. */
  readonly vars?: Readonly<Record<string, string>>;
  /** Where Durable Object storage lives. */
  readonly persistDir: string;
  /** Markers whose lines in the Worker's output are counted (e.g. its fail-open log line). */
  readonly countLinesContaining?: readonly string[];
  /** Opens workerd's inspector on this port, 0 for any free one (an inspector session costs throughput). */
  readonly inspectorPort?: number;
  /** V8 flags for the whole workerd process, e.g. `--max-heap-size=128` (see v8-flags.ts); default BENCH_V8_FLAGS. */
  readonly v8Flags?: readonly string[];
}

const OUTPUT_LINES = 40;
/** How workerd's last lines begin when V8 gives up (e.g. "V8 fatal error; location = Reached heap limit"). */
const FATAL = /V8 fatal error|Received signal/;
const ENV_V8_FLAGS = (process.env.BENCH_V8_FLAGS ?? "").split(" ").filter(Boolean);

/** Distinct lines in order of first appearance, each with how often it came. */
function foldRepeats(lines: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const line of lines) counts.set(line, (counts.get(line) ?? 0) + 1);
  return [...counts].map(([line, count]) => (count > 1 ? `${line} (× ${count})` : line)).join("\n");
}

export async function hostWorker(options: HostOptions): Promise<WorkerHost> {
  // Read from a copy in the persist directory, so that a developer's .dev.vars / .env next to the
  // real config never leak into the measured Worker: its bindings are exactly the committed ones.
  mkdirSync(options.persistDir, { recursive: true });
  const configCopy = join(options.persistDir, basename(options.wranglerConfig));
  copyFileSync(options.wranglerConfig, configCopy);
  const { workerOptions } = unstable_getMiniflareWorkerOptions(configCopy);
  const output: string[] = [];
  const counts = new Map<string, number>((options.countLinesContaining ?? []).map((marker) => [marker, 0]));
  const keep = (chunk: Buffer) => {
    const lines = chunk.toString("utf8").split("\n").filter(Boolean);
    for (const line of lines) for (const [marker, count] of counts) if (line.includes(marker)) counts.set(marker, count + 1);
    for (const line of lines) if (FATAL.test(line)) process.stderr.write(`${options.name}'s workerd: ${line}\n`);
    output.push(...lines);
    if (output.length > OUTPUT_LINES) output.splice(0, output.length - OUTPUT_LINES);
  };
  const workerdBefore = new Set(childProcesses("workerd"));
  // The persist directory is this host's own, and Miniflare writes its path into the config.
  const v8Flags = options.v8Flags ?? ENV_V8_FLAGS;
  const flagsApplied = v8Flags.length > 0 ? withV8Flags(options.persistDir, v8Flags) : () => true;
  const mf = new Miniflare({
    host: "127.0.0.1",
    port: 0,
    log: new NoOpLog(),
    logRequests: false,
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      stdout.on("data", keep);
      stderr.on("data", keep);
    },
    durableObjectsPersist: options.persistDir,
    ...(options.inspectorPort === undefined ? {} : { inspectorPort: options.inspectorPort }),
    workers: [
      {
        name: options.name,
        compatibilityDate: workerOptions.compatibilityDate,
        compatibilityFlags: workerOptions.compatibilityFlags,
        durableObjects: workerOptions.durableObjects,
        ratelimits: workerOptions.ratelimits,
        bindings: { ...workerOptions.bindings, ...options.vars },
        modules: true,
        modulesRoot: dirname(options.script),
        scriptPath: options.script,
      },
    ],
  });
  let url: string;
  let inspectorOrigin: string | undefined;
  try {
    url = (await mf.ready).toString().replace(/\/$/, "");
    if (options.inspectorPort !== undefined) inspectorOrigin = `http://127.0.0.1:${new URL(await mf.getInspectorURL()).port}`;
  } catch (error) {
    flagsApplied();
    throw new Error(`${options.name}: workerd did not start: ${(error as Error).message}\n${output.join("\n")}`, { cause: error });
  }
  if (!flagsApplied()) {
    await mf.dispose();
    throw new Error(`${options.name}: the V8 flags were not written into workerd's config (its persist directory not found in it)`);
  }
  const workerd = childProcesses("workerd").filter((pid) => !workerdBefore.has(pid));
  const pid = workerd.length === 1 ? workerd[0] : undefined;
  return {
    url,
    pid,
    inspectorOrigin,
    cpuSeconds: () => cpuSeconds(pid),
    recentOutput: () => foldRepeats(output),
    linesContaining: (marker) => counts.get(marker) ?? 0,
    close: () => mf.dispose(),
  };
}
