/**
 * CPU time, memory and descendants of processes, read from /proc (Linux). On 2 shared cores the req/s of a
 * run moves with whatever else the machine is doing; the CPU seconds workerd spends per request move far
 * less, so the bench reports both. Elsewhere these return undefined (or nothing) and the column stays empty.
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

export interface Memory {
  readonly rss: number;
  readonly anon: number;
  readonly file: number;
}

/** Resident memory of `pid` in bytes (all of it, anonymous, file-backed), from /proc/<pid>/status. */
export function memoryOf(pid: number): Memory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? Number.NaN) * 1024;
    return { rss: kib("VmRSS"), anon: kib("RssAnon"), file: kib("RssFile") };
  } catch {
    return undefined;
  }
}

/** Live descendants of `root`, with their command names and command lines. */
export function descendants(root: number): Array<{ readonly name: string; readonly pid: number; readonly cmdline: string }> {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const all = entries
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      const pid = Number(entry);
      const stat = readStat(pid);
      if (!stat) return [];
      try {
        return [{ pid, ppid: stat.ppid, name: stat.comm, cmdline: readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ") }];
      } catch {
        return [];
      }
    });
  const found = all.filter(({ ppid }) => ppid === root);
  for (let i = 0; i < found.length; i++) found.push(...all.filter(({ ppid }) => ppid === found[i]!.pid));
  return found;
}
