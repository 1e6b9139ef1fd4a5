/**
 * `npm start` (scripts/start-dev.mjs running `wrangler dev`) stops its whole process tree on one SIGTERM, even
 * after its workerd was killed, and a start on a taken port says so in one line instead of a banner and a stack.
 */

import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { freePort } from "../support/free-port.ts";
import { groupAlive, RECORDS_ENV, spawnGroup, stopGroup } from "../support/processes.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly pgrp: number;
  readonly comm: string;
  /** Clock ticks after boot when it started: with the pid, names the process even if the pid is reused. */
  readonly start: string;
}

/** Live processes (zombies do not count: whoever adopted an orphan may never reap it). */
function liveProcesses(): Proc[] {
  const found: Proc[] = [];
  for (const name of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    try {
      // "pid (comm) state ppid pgrp … starttime(22nd field)"; comm may contain spaces, so split after the last ")".
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" || fields[0] === "X") continue;
      found.push({ pid: Number(name), ppid: Number(fields[1]), pgrp: Number(fields[2]), comm, start: fields[19] });
    } catch {
      // exited while we looked
    }
  }
  return found;
}

/**
 * `root` and every live process below it. The groups they lead are recorded as test/support/processes.ts
 * records its own (start-dev.mjs starts wrangler in a group of its own), so that the run's global teardown
 * kills them should this test worker be killed outright.
 */
function tree(root: number): Proc[] {
  const all = liveProcesses();
  const found = all.filter(({ pid }) => pid === root);
  for (let i = 0; i < found.length; i++) found.push(...all.filter(({ ppid }) => ppid === found[i].pid));
  const records = process.env[RECORDS_ENV];
  for (const { pid, pgrp } of found) if (records && pid === pgrp) writeFileSync(join(records, String(pgrp)), "npm start's tree\n");
  return found;
}

const same = (a: Proc, b: Proc) => a.pid === b.pid && a.start === b.start;

/** Which of `procs` still run. */
function alive(procs: readonly Proc[]): string[] {
  return liveProcesses()
    .filter((a) => procs.some((b) => same(a, b)))
    .map(({ pid, comm }) => `${pid} ${comm}`);
}

/** Which of `seen` still run, or share a process group with one of them (however they were reparented). */
function stillRunning(seen: readonly Proc[]): string[] {
  const groups = new Set(seen.map(({ pgrp }) => pgrp));
  return liveProcesses()
    .filter((a) => groups.has(a.pgrp) || seen.some((b) => same(a, b)))
    .map(({ pid, comm }) => `${pid} ${comm}`);
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => resolve({ code, signal }));
  });
}

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs `command` (npm start or the script itself) in a group of its own, with its output collected. */
async function start(command: string, args: readonly string[], port: number): Promise<{ child: ChildProcess; output: () => string; seen: Proc[] }> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-npm-start-"));
  const wranglerArgs = ["--port", String(port), "--inspector-port", String(await freePort()), "--persist-to", join(dir, "state"), "--log-level", "warn"];
  const child = spawnGroup(command, [...args, ...wranglerArgs, "--show-interactive-dev-session=false"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, CI: "1", NO_COLOR: "1" },
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const seen: Proc[] = [];
  cleanups.push(async () => {
    // Whatever the outcome, nothing of it is left: its own group, then any group its tree moved to.
    await stopGroup(child, { graceMs: 0 });
    for (const pgrp of new Set(seen.map((proc) => proc.pgrp))) {
      if (groupAlive(pgrp)) process.kill(-pgrp, "SIGKILL");
      await vi.waitFor(() => expect(groupAlive(pgrp)).toBe(false), { timeout: 10_000 });
      if (process.env[RECORDS_ENV]) rmSync(join(process.env[RECORDS_ENV], String(pgrp)), { force: true });
    }
    await rm(dir, { recursive: true, force: true });
  });
  return { child, output: () => output, seen };
}

/** Waits until the edge answers. */
async function answering(child: ChildProcess, port: number, output: () => string): Promise<void> {
  await vi.waitFor(
    async () => {
      expect(child.exitCode, output()).toBeNull();
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
    },
    { timeout: 90_000, interval: 250 },
  );
}

async function killWorkerd(seen: Proc[]): Promise<void> {
  const workerds = seen.filter(({ comm }) => comm === "workerd");
  expect(workerds.length).toBeGreaterThan(0);
  for (const { pid } of workerds) process.kill(pid, "SIGKILL");
  await vi.waitFor(() => expect(alive(workerds)).toEqual([]), { timeout: 10_000 });
}

describe("npm start and signals", () => {
  it("one SIGTERM to npm start, after wrangler's workerd was killed, stops the whole tree", async () => {
    const port = await freePort();
    const { child, output, seen } = await start("npm", ["start", "--silent", "--"], port);
    await answering(child, port, output);
    seen.push(...tree(child.pid!));
    await killWorkerd(seen);
    // Whatever wrangler started meanwhile (a new workerd) is part of the tree too.
    seen.push(...tree(child.pid!));

    process.kill(child.pid!, "SIGTERM");

    await vi.waitFor(() => expect(stillRunning(seen), output()).toEqual([]), { timeout: 30_000, interval: 100 });
  });

  it("one SIGTERM to the script, after wrangler's workerd was killed, stops the whole tree and exits 143", async () => {
    const port = await freePort();
    const { child, output, seen } = await start(process.execPath, ["scripts/start-dev.mjs"], port);
    await answering(child, port, output);
    seen.push(...tree(child.pid!));
    await killWorkerd(seen);
    seen.push(...tree(child.pid!));

    process.kill(child.pid!, "SIGTERM");

    expect(await exitOf(child)).toEqual({ code: 128 + 15, signal: null });
    await vi.waitFor(() => expect(stillRunning(seen), output()).toEqual([]), { timeout: 30_000, interval: 100 });
  });

  it("a start on a taken port exits 1 with one line naming the port and how to choose another", async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => taken.close(() => resolve())));
    const port = (taken.address() as { port: number }).port;
    const { child, output } = await start(process.execPath, ["scripts/start-dev.mjs"], port);

    expect(await exitOf(child)).toEqual({ code: 1, signal: null });
    expect(output()).not.toContain("Tollgate management API");
    expect(output().trim()).toBe(`Port ${port} on 127.0.0.1 is taken (another npm start?); choose another with: npm start -- --port 9000`);
  });
});
