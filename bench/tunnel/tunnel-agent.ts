/**
 * The agent of the tunnel benchmark: the CLI (`tollgate agent http <port>`) in its own Node process, as a
 * user runs it, connected to the bench edge. BENCH_AGENT_NODE_ARGS adds Node options (e.g. `--cpu-prof`).
 */

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export interface BenchAgent {
  readonly pid: number;
  /** The tunnel's public URL, as the agent printed it. */
  readonly publicUrl: string;
  close(): Promise<void>;
}

/** The agent of this checkout, or with `root` the one of another checkout (bench/tunnel/agent-ab.ts). */
export async function startBenchAgent(edgeUrl: string, localPort: number, root?: string): Promise<BenchAgent> {
  const nodeArgs = (process.env.BENCH_AGENT_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
  const agent: ChildProcess = spawn(
    process.execPath,
    [
      ...nodeArgs,
      root === undefined ? fileURLToPath(new URL("../../bin/tollgate.mjs", import.meta.url)) : join(root, "bin/tollgate.mjs"),
      "agent",
      "http",
      String(localPort),
      "--server-addr",
      edgeUrl,
      "--web-addr",
      "false",
      "--log",
      "logfmt",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => agent.once("exit", () => resolve()));
  const publicUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the agent did not open its tunnel within 30 s")), 30_000);
    createInterface({ input: agent.stdout! }).on("line", (line) => {
      const match = /msg="tunnel online" .*url=(\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    agent.once("exit", (code) => reject(new Error(`the agent exited with ${code}`)));
  });
  return {
    pid: agent.pid!,
    publicUrl,
    close: async () => {
      if (agent.exitCode === null) agent.kill("SIGINT");
      await exited;
    },
  };
}
