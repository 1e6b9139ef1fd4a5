/**
 * A failing run leaves no server behind: vitest runs test/fixtures/process-cleanup/, whose files each start
 * an edge (wrangler dev and its workerd) and then fail — an assertion, a throw in beforeAll, a sibling start
 * failing while the edge starts, the test worker killed outright — and afterwards no process of that run is
 * left.
 */

import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { groupAlive, spawnGroup, stopGroup } from "../support/processes.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const VITEST = join(ROOT, "node_modules/vitest/vitest.mjs");

/** Live processes whose command line or environment contains `marker` (zombies have neither). */
async function processesMentioning(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of (await readdir("/proc")).filter((name) => /^\d+$/.test(name))) {
    try {
      const [cmdline, environ] = await Promise.all([readFile(`/proc/${pid}/cmdline`, "utf8"), readFile(`/proc/${pid}/environ`, "utf8")]);
      if (cmdline.includes(marker) || environ.includes(marker)) found.push(`${pid} ${cmdline.replaceAll("\0", " ").trim()}`);
    } catch {
      // exited while we looked, or not ours to read
    }
  }
  return found;
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))));
}

let dir: string;
let marker: string;
let output = "";
let exitCode: number | null;
let started: Array<{ fixture: string; pgid: number }>;

beforeAll(async () => {
  marker = `tollgate-fixture-${randomUUID()}`;
  // The marker names the run's temp directory, so it shows in wrangler's --persist-to and every environment.
  dir = await mkdtemp(join(tmpdir(), `${marker}-`));
  const run = spawnGroup(process.execPath, [VITEST, "run", "--config", "test/fixtures/process-cleanup/vitest.config.ts"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", TMPDIR: dir, TOLLGATE_FIXTURE_DIR: dir, TOLLGATE_FIXTURE_MARKER: marker },
  });
  run.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  run.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  try {
    exitCode = await exitOf(run);
  } finally {
    await stopGroup(run, { graceMs: 0 });
  }
  started = (await readFile(join(dir, "started"), "utf8").catch(() => ""))
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => ({ fixture: line.split(" ")[0], pgid: Number(line.split(" ")[1]) }));
});

afterAll(async () => {
  // Should a net have failed, the failing test says so; what it left is stopped here, not left to the machine.
  for (const { pgid } of started ?? []) if (groupAlive(pgid)) process.kill(-pgid, "SIGKILL");
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("after a run whose tests fail while their edges run", () => {
  it("the run failed the four deliberate ways, each after its edge was started", () => {
    expect(exitCode, output).toBe(1);
    expect(output).toContain("deliberate failure: an assertion");
    expect(output).toContain("deliberate failure: beforeAll throws after the edge started");
    expect(output).toContain("deliberate failure: a sibling start fails while the edge is starting");
    expect(output).toContain("Worker exited unexpectedly");
    expect(started.map(({ fixture }) => fixture).sort(), output).toEqual(["abandoned-start", "failing-assertion", "failing-setup", "killed-worker"]);
  });

  it("the run's global teardown had only the killed worker's edge left to kill; the others were stopped by their tests' hooks or workers", () => {
    const killedWorker = started.find(({ fixture }) => fixture === "killed-worker")!;
    expect(output).toContain(`process groups left behind by a killed test worker, now killed: 1 (${killedWorker.pgid})`);
  });

  it("no process of any edge's group is left running", () => {
    expect(started.filter(({ pgid }) => groupAlive(pgid))).toEqual([]);
  });

  it("no process that the run started is left, whatever its group", async () => {
    expect(await processesMentioning(marker)).toEqual([]);
  });

  it("the scan does find a live process that carries a marker", async () => {
    const probeMarker = `tollgate-probe-${randomUUID()}`;
    const probe = spawnGroup(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      stdio: "ignore",
      env: { ...process.env, TOLLGATE_PROBE_MARKER: probeMarker },
    });
    try {
      await expect.poll(() => processesMentioning(probeMarker), { timeout: 10_000 }).toHaveLength(1);
    } finally {
      await stopGroup(probe, { graceMs: 0 });
    }
    expect(await processesMentioning(probeMarker)).toEqual([]);
  });
});
