/**
 * Tollgate as a drop-in for ngrok, as a user gets it: the package packed and installed into a folder outside
 * the checkout, run from there against `wrangler dev`; the published `ngrok` npm package, unmodified, driving
 * it through its binPath; ngrok's own v2 and v3 config files starting their tunnels.
 */

import type { ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import ngrok from "ngrok";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { spawnGroup, stopGroup } from "../support/processes.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";
import { DEV_KEY, Edge } from "./support/edge.ts";
import { installedAgent, type InstalledAgent } from "./support/installed-agent.ts";
import { fetchPublic, jsonOf } from "./support/public-client.ts";

const WRAPPER_DIR = fileURLToPath(new URL("./support/ngrok-wrapper/", import.meta.url));
const CONFIGS = fileURLToPath(new URL("./support/ngrok-configs/", import.meta.url));

let edge: Edge;
let upstream: Upstream;
let agent: InstalledAgent;
const children: ChildProcess[] = [];

beforeAll(async () => {
  [edge, upstream, agent] = await Promise.all([Edge.start(), startUpstream(), installedAgent()]);
});

afterAll(async () => {
  await Promise.all(children.map((child) => stopGroup(child)));
  await ngrok.kill();
  await upstream?.close();
  await edge?.dispose();
});

/** Runs the installed `tollgate` from the consumer project; collects its stdout lines and stderr. */
function runInstalled(args: string[]) {
  const child = spawnGroup(agent.bin, args, {
    cwd: agent.project,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, TOLLGATE_SERVER_ADDR: "", TOLLGATE_API_KEY: "" },
  });
  children.push(child);
  const lines: string[] = [];
  let stderr = "";
  createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, lines, stderr: () => stderr };
}

async function configFrom(template: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-ngrok-config-"));
  const file = join(dir, template);
  const text = (await readFile(join(CONFIGS, template), "utf8")).replaceAll("UPSTREAM_PORT", String(upstream.port)).replaceAll("EDGE_URL", edge.url);
  await writeFile(file, text);
  return file;
}

describe("the installed package", () => {
  it("prints its version from a folder outside the checkout", async () => {
    const run = runInstalled(["--version"]);
    const code = await new Promise((resolve) => run.child.once("exit", resolve));
    expect(code).toBe(0);
    expect(run.lines).toEqual([expect.stringMatching(/^tollgate version \d+\.\d+\.\d+/)]);
    expect(run.stderr()).toBe("");
  });

  it("opens a tunnel whose public URL reaches the local service, logging ngrok's lines and nothing on stderr", async () => {
    const run = runInstalled(["http", String(upstream.port), "--server-addr", edge.url, "--web-addr", "127.0.0.1:0", "--log", "stdout", "--name", "installed"]);
    const started = await vi.waitFor(
      () => {
        const line = run.lines.find((candidate) => candidate.includes('msg="started tunnel"'));
        if (!line) throw new Error(`no tunnel yet: ${run.lines.join("\n")}\n${run.stderr()}`);
        return line;
      },
      { timeout: 30_000, interval: 100 },
    );
    const url = /url=(\S+)/.exec(started)![1];
    expect(run.lines.join("\n")).toMatch(/msg="starting web service" obj=web addr=127\.0\.0\.1:\d+/);
    expect(run.lines.join("\n")).toContain('msg="client session established" obj=tunnels.session');
    expect(run.lines.join("\n")).toContain('msg="tunnel session started" obj=tunnels.session');
    const answer = await fetchPublic(edge.url, url, "/from-installed");
    expect(answer.status).toBe(200);
    expect(jsonOf(answer)).toMatchObject({ method: "GET", url: "/from-installed" });
    await stopGroup(run.child);
    expect(run.child.exitCode).toBe(0);
    expect(run.stderr()).toBe("");
  });
});

describe("the published ngrok npm package, unmodified", () => {
  it("getVersion() reads the agent's version from `ngrok --version`", async () => {
    const { version } = JSON.parse(await readFile(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as { version: string };
    vi.stubEnv("TOLLGATE_TEST_NGROK", join(agent.ngrokDir, "ngrok"));
    try {
      expect(await ngrok.getVersion({ binPath: () => WRAPPER_DIR })).toBe(version);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("connect() saves the authtoken, starts the agent, and returns a public URL that reaches the local server; getApi() lists it; disconnect() and kill() clean up", async () => {
    const configHome = await mkdtemp(join(tmpdir(), "tollgate-xdg-"));
    const configFile = join(configHome, "tollgate", "agent.yml");
    await mkdir(join(configHome, "tollgate"));
    // The default config file, as a user might have it: a free port for the agent API (tests run side by side).
    await writeFile(configFile, "# my agent\nversion: 3\nagent:\n  web_addr: 127.0.0.1:0\n");
    vi.stubEnv("XDG_CONFIG_HOME", configHome);
    vi.stubEnv("TOLLGATE_SERVER_ADDR", edge.url);
    vi.stubEnv("TOLLGATE_API_KEY", "");
    vi.stubEnv("TOLLGATE_TEST_NGROK", join(agent.ngrokDir, "ngrok"));
    let terminated = false;
    try {
      const url = await ngrok.connect({ addr: upstream.port, binPath: () => WRAPPER_DIR, authtoken: DEV_KEY, onTerminated: () => (terminated = true) });
      expect(url).toMatch(new RegExp(`^http://[a-z0-9]{12}\\.localhost:${edge.port}$`));

      // `ngrok authtoken TOKEN` wrote the credential into the default file, keeping what was there.
      const saved = await readFile(configFile, "utf8");
      expect(saved).toContain("# my agent");
      expect(parse(saved)).toEqual({ version: 3, agent: { web_addr: "127.0.0.1:0", authtoken: DEV_KEY } });

      const answer = await fetchPublic(edge.url, url, "/through/ngrok?x=1");
      expect(answer.status).toBe(200);
      expect(jsonOf(answer)).toMatchObject({ method: "GET", url: "/through/ngrok?x=1" });

      const listed = (await ngrok.getApi()!.listTunnels()) as unknown as { tunnels: Array<{ public_url: string; proto: string; config: { addr: string } }> };
      expect(listed.tunnels).toEqual([
        expect.objectContaining({ public_url: url, proto: "http", config: expect.objectContaining({ addr: `http://localhost:${upstream.port}` }) }),
      ]);
      const online = await edge.management("/tunnels");
      expect(online.body.tunnels.map((tunnel: { public_url: string }) => tunnel.public_url)).toEqual([url]);

      await ngrok.disconnect(url);
      expect(((await ngrok.getApi()!.listTunnels()) as { tunnels: unknown[] }).tunnels).toEqual([]);
      await vi.waitFor(
        async () => {
          const after = await edge.management("/tunnels");
          expect(after.body.tunnels).toEqual([]);
        },
        { timeout: 15_000, interval: 400 },
      );

      await ngrok.kill();
      await vi.waitFor(() => expect(terminated).toBe(true), { timeout: 15_000 });
      expect(ngrok.getApi()).toBeNull();
    } finally {
      await ngrok.kill();
      vi.unstubAllEnvs();
    }
  });
});

describe("ngrok's own config files", () => {
  it("a version 2 file from ngrok's documentation starts its tunnel, with JSON log lines", async () => {
    const file = await configFrom("v2.yml");
    const run = runInstalled(["start", "--all", "--config", file, "--server-addr", edge.url]);
    const started = await vi.waitFor(
      () => {
        const line = run.lines.map((text) => JSON.parse(text) as Record<string, string>).find((record) => record.msg === "started tunnel");
        if (!line) throw new Error(`no tunnel yet: ${run.lines.join("\n")}\n${run.stderr()}`);
        return line;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(started).toMatchObject({ lvl: "info", obj: "tunnels", name: "website", url: `http://myapp.localhost:${edge.port}` });
    // The keys that mean nothing here are read, and each is named once in the log.
    const ignored = run.lines.map((text) => JSON.parse(text) as Record<string, string>).filter((record) => record.msg === "config key ignored");
    expect(ignored.map((record) => record.key)).toEqual([
      "connect_timeout",
      "console_ui_color",
      "heartbeat_interval",
      "heartbeat_tolerance",
      "remote_management",
      "update_channel",
      "update_check",
    ]);
    const answer = await fetchPublic(edge.url, started.url, "/v2");
    expect(jsonOf(answer)).toMatchObject({ url: "/v2" });
    await stopGroup(run.child);
    expect(run.stderr()).toBe("");
  });

  it("a version 3 file from ngrok's documentation starts its endpoints, traffic policy included", async () => {
    const file = await configFrom("v3.yml");
    const run = runInstalled(["start", "--all", "--config", file]);
    const urls = await vi.waitFor(
      () => {
        const found = new Map(
          run.lines.filter((line) => line.includes('msg="started tunnel"')).map((line) => [/name=(\S+)/.exec(line)![1], /url=(\S+)/.exec(line)![1]]),
        );
        if (found.size < 2) throw new Error(`not both yet: ${run.lines.join("\n")}\n${run.stderr()}`);
        return found;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(urls.get("basic")).toBe(`http://basic.localhost:${edge.port}`);
    expect(urls.get("hello")).toBe(`http://hello.localhost:${edge.port}`);
    expect(jsonOf(await fetchPublic(edge.url, urls.get("basic")!, "/v3"))).toMatchObject({ url: "/v3" });
    const hello = await fetchPublic(edge.url, urls.get("hello")!, "/");
    expect(hello.status).toBe(200);
    expect(hello.body.toString()).toBe("Hello from the edge");
    await stopGroup(run.child);
    expect(run.stderr()).toBe("");
  });
});
