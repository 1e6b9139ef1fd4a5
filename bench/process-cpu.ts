/**
 * CPU time of child processes, read from /proc (Linux). On 2 shared cores the req/s of a run moves
 * with whatever else the machine is doing; the CPU seconds workerd spends per request move far less,
 * so the bench reports both. Elsewhere these return undefined and the column stays empty.
 */

import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux this runs on

interface ProcStat {
  readonly comm: string;
  readonly ppid: number;
  /** utime + stime, in clock ticks. */
  readonly ticks: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = text.lastIndexOf(")");
    const comm = text.slice(text.indexOf("(") + 1, close);
    const fields = text.slice(close + 2).split(" ");
    // After "pid (comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
    return { comm, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** Pids of this process's children whose command name is `comm`. */
export function childProcesses(comm: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  return entries
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      const stat = readStat(pid);
      return stat !== undefined && stat.ppid === process.pid && stat.comm === comm;
    });
}

/** CPU seconds (user + system) the process has used so far, or undefined when unknown. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  const stat = readStat(pid);
  return stat ? stat.ticks / TICKS_PER_SECOND : undefined;
}
