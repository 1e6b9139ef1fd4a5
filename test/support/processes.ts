/**
 * Servers that tests run as child processes (wrangler dev and its workerd), each in a process group of its
 * own and stopped whatever the outcome: by its owner's teardown; else when the test worker exits or is
 * signalled (vitest stops a worker with SIGTERM, Ctrl-C sends SIGINT); else, if the worker was killed
 * outright, by the run's global teardown (test/support/process-groups-setup.ts) from the record written here.
 */

import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The directory where this run records the groups it started (set by the global setup; absent outside vitest). */
export const RECORDS_ENV = "TOLLGATE_TEST_PROCESS_RECORDS";

/** Groups started by this process and not yet seen empty: process group id → leader. */
const running = new Map<number, ChildProcess>();

/** Starts `command` as the leader of a new process group, recorded until {@link stopGroup} sees the group gone. */
export function spawnGroup(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  installSafetyNet();
  const child = spawn(command, args, { ...options, detached: true });
  if (child.pid !== undefined) {
    running.set(child.pid, child);
    const records = process.env[RECORDS_ENV];
    if (records) writeFileSync(join(records, String(child.pid)), `${[command, ...args].join(" ")}\n`, { flag: "w" });
  }
  return child;
}

/**
 * Stops the whole group led by `child`: SIGTERM, then SIGKILL once `graceMs` has passed (at once with
 * `graceMs: 0`, as a crash would), and waits until no live process is left in it.
 */
export async function stopGroup(child: ChildProcess, { graceMs = 5000 }: { graceMs?: number } = {}): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  if (graceMs > 0) {
    // The leader first, so that it can stop and reap its own children (wrangler disposes of workerd).
    send(pgid, "SIGTERM");
    await until(() => !groupAlive(pgid), graceMs / 2);
    send(-pgid, "SIGTERM");
    await until(() => !groupAlive(pgid), graceMs / 2);
  }
  if (groupAlive(pgid)) {
    send(-pgid, "SIGKILL");
    await until(() => !groupAlive(pgid), 30_000);
  }
  // The leader's own exit may still be on its way through the event loop.
  if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once("exit", resolve));
  forget(pgid);
}

/** Process group ids started here and not yet stopped. */
export function runningGroups(): number[] {
  return [...running.keys()];
}

/**
 * Kills every group still recorded in `records` (what a test worker killed outright left behind), waits
 * until they are gone and removes the records; answers the groups that were still running.
 */
export async function killRecordedGroups(records: string): Promise<number[]> {
  const left: number[] = [];
  for (const name of readdirSync(records)) {
    const pgid = Number(name);
    if (Number.isInteger(pgid) && pgid > 1 && groupAlive(pgid)) {
      left.push(pgid);
      send(-pgid, "SIGKILL");
    }
    rmSync(join(records, name), { force: true });
  }
  await until(() => !left.some(groupAlive), 30_000);
  return left;
}

/**
 * Whether any process of group `pgid` is still running. Zombies do not count: an orphan's exit is reaped by
 * whatever adopted it, which in a container may be a PID 1 that never reaps.
 */
export function groupAlive(pgid: number): boolean {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    // No /proc (macOS): a signal 0 says whether the group has any member.
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  return pids.some((pid) => {
    try {
      // "pid (comm) state ppid pgrp …"; comm may contain spaces and parentheses, so read after the last ")".
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return Number(pgrp) === pgid && state !== "Z" && state !== "X";
    } catch {
      return false; // exited while we looked
    }
  });
}

/** `process.kill` for a process that may be gone already; a negative `pid` names a process group. */
function send(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

function forget(pgid: number): void {
  running.delete(pgid);
  const records = process.env[RECORDS_ENV];
  if (records) rmSync(join(records, String(pgid)), { force: true });
}

const POLL_MS = 50;

/** Polls `done` every POLL_MS for at most about `timeoutMs` (a grace period before the next, harsher step). */
async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  for (let polls = Math.ceil(timeoutMs / POLL_MS); polls > 0 && !done(); polls--) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

let netInstalled = false;

/** On exit or SIGINT/SIGTERM of this process, SIGKILL every group still running; synchronous, as `exit` requires. */
function installSafetyNet(): void {
  if (netInstalled) return;
  netInstalled = true;
  const killAll = () => {
    for (const pgid of running.keys()) {
      send(-pgid, "SIGKILL");
      forget(pgid);
    }
  };
  process.once("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = () => {
      killAll();
      // Listening replaced the default action, dying of the signal; restore it unless someone else listens too.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.once(signal, onSignal);
  }
}
