/**
 * The `tollgate` command runs in a child Node started with a heap floor (bin/relaunch.mjs). These tests run the
 * real command and look at its processes through /proc: the child has the flag and its own session, every signal
 * the command gets reaches the child once, the command exits as the child did, and the child never outlives it.
 */

import { spawn, type ChildProcessByStdio } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HEAP_FLOOR_FLAG } from "../../bin/relaunch.mjs";

const BIN = fileURLToPath(new URL("../../bin/tollgate.mjs", import.meta.url));
/** Ceiling for a command to start from source (tsx) twice, on a busy machine. */
const STARTS = { timeout: 45_000, interval: 50 };
/** Ceiling for a process to act on a signal. */
const SETTLES = { timeout: 15_000, interval: 50 };

interface Stat {
  readonly state: string;
  readonly ppid: number;
  readonly session: number;
}

function stat(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0]!, ppid: Number(fields[1]), session: Number(fields[3]) };
  } catch {
    return undefined;
  }
}

const alive = (pid: number) => {
  const state = stat(pid)?.state;
  return state !== undefined && state !== "Z";
};

function childOf(parent: number): number | undefined {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .find((pid) => stat(pid)?.ppid === parent);
}

const running: Array<ChildProcessByStdio<null, Readable, Readable>> = [];

afterEach(() => {
  for (const command of running.splice(0)) if (command.exitCode === null && command.signalCode === null) command.kill("SIGKILL");
});

/** `tollgate agent http` against an edge that never answers: it runs until told to stop. */
function startAgentCommand() {
  const command = spawn(process.execPath, [BIN, "agent", "http", "9", "--server-addr", "http://127.0.0.1:1", "--web-addr", "false"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(command);
  let output = "";
  command.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  command.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    command.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { command, exited, output: () => output };
}

/** The relaying child, once the agent in it is running (it logs its first attempt to reach the edge). */
async function relaunched(started: ReturnType<typeof startAgentCommand>): Promise<number> {
  return vi.waitFor(() => {
    expect(started.output()).toContain('msg="session connecting"');
    const child = childOf(started.command.pid!);
    expect(child, started.output()).toBeDefined();
    return child!;
  }, STARTS);
}

describe.runIf(process.platform === "linux")("the command's relaunch with a heap floor", () => {
  it("runs the command in a child Node with the flag, in a session of its own, the same arguments after it", async () => {
    const started = startAgentCommand();
    const child = await relaunched(started);
    const argv = readFileSync(`/proc/${child}/cmdline`, "utf8").split("\0").filter(Boolean);
    expect(argv.slice(1)).toEqual([HEAP_FLOOR_FLAG, BIN, "agent", "http", "9", "--server-addr", "http://127.0.0.1:1", "--web-addr", "false"]);
    expect(stat(child)!.session).toBe(child);
    expect(stat(child)!.session).not.toBe(stat(started.command.pid!)!.session);
    expect(childOf(child)).toBeUndefined();
  });

  it("passes one Ctrl-C on: the agent shuts down once, cleanly, and the command exits as it did", async () => {
    const started = startAgentCommand();
    const child = await relaunched(started);
    started.command.kill("SIGINT");
    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(alive(child)).toBe(false);
    expect(started.output().match(/msg="shutting down"/g)).toHaveLength(1);
  });

  it("stops the child along with itself on Ctrl-Z, and continues it with itself", async () => {
    const started = startAgentCommand();
    const child = await relaunched(started);
    started.command.kill("SIGTSTP");
    await vi.waitFor(() => {
      expect(stat(child)!.state).toBe("T");
      expect(stat(started.command.pid!)!.state).toBe("T");
    }, SETTLES);
    started.command.kill("SIGCONT");
    await vi.waitFor(() => expect(stat(child)!.state).not.toBe("T"), SETTLES);
    started.command.kill("SIGTERM");
    expect(await started.exited).toEqual({ code: 0, signal: null });
  });

  it("leaves no child behind when it is killed outright: the child stops on its own", async () => {
    const started = startAgentCommand();
    const child = await relaunched(started);
    started.command.kill("SIGKILL");
    await started.exited;
    await vi.waitFor(() => expect(alive(child)).toBe(false), SETTLES);
  });

  it("exits with the child's exit code", async () => {
    const command = spawn(process.execPath, [BIN, "config", "check", "--config", "/nonexistent/agent.yml"], { stdio: ["ignore", "pipe", "pipe"] });
    running.push(command);
    let stderr = "";
    command.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => command.once("exit", (exitCode) => resolve(exitCode)));
    expect(code).toBe(2);
    expect(stderr).toContain("/nonexistent/agent.yml: cannot read the config file");
  });
});
