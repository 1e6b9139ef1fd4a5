/**
 * Whether a process's memory stays flat under sustained load: its resident set (VmRSS in /proc/<pid>/status,
 * Linux) sampled once a second while the load runs. The first seconds fill pools, caches and JIT code, so
 * growth is counted from a sample taken after a warm-up share of the run to the last sample.
 */

import { readFileSync } from "node:fs";

/** Resident set size in bytes, or undefined when unknown (no /proc, the process is gone). */
export function residentBytes(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export interface MemoryTrace {
  readonly name: string;
  /** Before the load started. */
  readonly idle: number;
  /** After the warm-up share of the run: what growth is counted from. */
  readonly start: number;
  /** The last sample, as the load ends. */
  readonly end: number;
  readonly peak: number;
  /** end − start, in bytes. */
  readonly growth: number;
  /** Least-squares slope of the samples after the warm-up, in bytes per minute. */
  readonly slopePerMinute: number;
}

export interface SoakOptions {
  readonly seconds: number;
  /** Share of the run before `start` is taken (default 1/6: 10 s of 60). */
  readonly warmupShare?: number;
  /** The processes to watch, by name. */
  readonly processes: ReadonlyArray<{ readonly name: string; readonly pid: number | undefined }>;
  /** Runs the load for the given seconds; the soak waits for it. */
  load(seconds: number): Promise<void>;
}

function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** Runs the load while sampling each process's RSS every second; undefined for a process whose RSS cannot be read. */
export async function soak(options: SoakOptions): Promise<Array<MemoryTrace | undefined>> {
  // workerd's RSS climbs for its first ~30 s of tunnel traffic on a fresh edge (200 s traced 2026-11-23: 290 MiB
  // at 10 s, 458 at 30 s, then 433–471 to the end), so half the run is warm-up and the other half is judged.
  const warmupMs = options.seconds * 1000 * (options.warmupShare ?? 1 / 2);
  const idle = options.processes.map((p) => residentBytes(p.pid));
  const samples = options.processes.map(() => [] as Array<[number, number]>);
  const began = Date.now();
  const take = () => {
    const at = Date.now() - began;
    options.processes.forEach((p, i) => {
      const rss = residentBytes(p.pid);
      if (rss !== undefined) samples[i]!.push([at, rss]);
    });
  };
  const timer = setInterval(take, 1000);
  try {
    await options.load(options.seconds);
  } finally {
    clearInterval(timer);
  }
  take();
  return options.processes.map((p, i) => {
    const list = samples[i]!;
    if (idle[i] === undefined || list.length === 0) return undefined;
    const after = list.filter(([at]) => at >= warmupMs);
    const counted = after.length > 0 ? after : list;
    const start = counted[0]![1];
    const end = list.at(-1)![1];
    return {
      name: p.name,
      idle: idle[i]!,
      start,
      end,
      peak: Math.max(...list.map(([, rss]) => rss)),
      growth: end - start,
      slopePerMinute: slope(counted) * 60_000,
    };
  });
}
