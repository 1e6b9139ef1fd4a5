/**
 * The edge for end-to-end tests: `wrangler dev` (workerd) on a free loopback port with a temporary persist
 * directory, as `npm start` runs it. It can be killed and started again on the same port and state.
 */

import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../support/free-port.ts";
import { spawnGroup, stopGroup } from "../../support/processes.ts";

export const DEV_KEY = "tgk_dev_local_only_0000000000000000";
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");

export interface EdgeOptions {
  /** Milliseconds between agent heartbeats; short so a silent agent goes offline within seconds. */
  readonly heartbeatMs?: number;
}

export class Edge {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly persistDir: string,
    readonly logFile: string,
    private readonly options: EdgeOptions,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A new edge, answering; if it does not come up, nothing of it is left running. */
  static async start(options: EdgeOptions = {}): Promise<Edge> {
    const dir = await mkdtemp(join(tmpdir(), "tollgate-e2e-"));
    const edge = new Edge(await freePort(), join(dir, "state"), join(dir, "wrangler.log"), options);
    await edge.start();
    return edge;
  }

  /** Starts (or restarts) wrangler dev and waits until it answers; stops it again if it does not. */
  async start(): Promise<void> {
    try {
      await this.spawn();
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  private async spawn(): Promise<void> {
    const keyHash = createHash("sha256").update(DEV_KEY).digest("hex");
    const args = [
      WRANGLER,
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(this.port),
      "--inspector-port",
      String(await freePort()),
      "--persist-to",
      this.persistDir,
      "--log-level",
      "warn",
      "--show-interactive-dev-session=false",
      "--var",
      `TOLLGATE_API_KEYS:acct_dev:${keyHash}`,
      "--var",
      `TUNNEL_HEARTBEAT_MS:${this.options.heartbeatMs ?? 1000}`,
    ];
    const log = createWriteStream(this.logFile, { flags: "a" });
    // A process group of its own, so stopping it takes workerd down too.
    const child = spawnGroup(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "1" } });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    this.child = child;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}; see ${this.logFile}`);
      try {
        await fetch(`${this.url}/`, { signal: AbortSignal.timeout(2000) });
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`wrangler dev did not answer within 60 s; see ${this.logFile}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /** Kills the edge (its whole process group) at once, as a crash would. */
  async stop(): Promise<void> {
    await this.halt(0);
  }

  /** Stops the edge for good (SIGTERM, then SIGKILL after a grace period) and removes its state. */
  async dispose(): Promise<void> {
    await this.halt(5000);
    await rm(this.persistDir, { recursive: true, force: true });
  }

  private async halt(graceMs: number): Promise<void> {
    const child = this.child;
    if (!child) return;
    // Even when wrangler itself has exited, workerd may be left in its group.
    await stopGroup(child, { graceMs });
    this.child = undefined;
  }

  /** The management API, authenticated with the development key. */
  async management(path: string): Promise<{ status: number; body: any }> {
    const response = await fetch(`${this.url}${path}`, { headers: { authorization: `Bearer ${DEV_KEY}`, "service-version": "2" } });
    return { status: response.status, body: await response.json() };
  }
}
