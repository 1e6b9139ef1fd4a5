import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildCommand } from "../../src/agent/commands/build-command.ts";
import { backoffDelay } from "../../src/agent/edge/backoff.ts";
import { quantile } from "../../src/agent/metrics/tunnel-metrics.ts";
import { formatRecord } from "../../src/agent/status/agent-log.ts";

async function dirWith(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-cli-"));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

const build = (argv: string[], cwd = tmpdir(), env: Record<string, string> = {}) => buildCommand(argv, { cwd, env });

describe("tollgate agent http", () => {
  it("`agent http 3000` is one http tunnel named command_line to localhost:3000 on the local edge", async () => {
    const command = await build(["agent", "http", "3000"]);
    expect(command).toMatchObject({
      kind: "run",
      config: { server_addr: "http://127.0.0.1:8787", api_key: "tgk_dev_local_only_0000000000000000", web_addr: "127.0.0.1:4040" },
      tunnels: [{ name: "command_line", definition: { proto: "http", addr: "3000", inspect: true } }],
      output: { screen: "auto", destination: undefined, format: "logfmt", level: "info" },
    });
  });

  it("takes flags over the environment over the config file", async () => {
    const cwd = await dirWith({ "agent.yml": "server_addr: http://file:1\napi_key: from-file\n" });
    const command = await build(
      ["agent", "http", "3000", "--config", "agent.yml", "--api-key", "from-flag", "--web-addr", "false", "--name", "web", "--subdomain", "myapp"],
      cwd,
      {
        TOLLGATE_SERVER_ADDR: "http://env:2",
      },
    );
    expect(command).toMatchObject({
      kind: "run",
      config: { server_addr: "http://env:2", api_key: "from-flag", web_addr: false },
      tunnels: [{ name: "web", definition: { subdomain: "myapp" } }],
    });
  });

  it("--pooling-enabled asks for an endpoint pool, as ngrok's flag does; without it the definition has none", async () => {
    const cwd = await dirWith({});
    expect(await build(["http", "3000", "--subdomain", "api", "--pooling-enabled"], cwd)).toMatchObject({
      kind: "run",
      tunnels: [{ definition: { subdomain: "api", pooling_enabled: true } }],
    });
    const plain = await build(["agent", "http", "3000"], cwd);
    expect(plain.kind === "run" && plain.tunnels[0].definition).not.toHaveProperty("pooling_enabled");
    const valued = await build(["http", "3000", "--pooling-enabled=yes"], cwd);
    expect(valued.kind === "error" && valued.message).toContain("--pooling-enabled takes no value (got 'yes')");
  });

  it("validates a traffic policy file with its line numbers", async () => {
    const cwd = await dirWith({ "policy.yml": "inbound:\n  - actions:\n      - type: nope\n" });
    const command = await build(["agent", "http", "3000", "--traffic-policy-file", "policy.yml"], cwd);
    expect(command.kind).toBe("error");
    expect(command.kind === "error" && command.message).toMatch(/policy\.yml:3: inbound\[0\]\.actions\[0\]\.type: unknown action type "nope"/);
  });

  it.each([
    [["agent", "http"], "agent http takes one address"],
    [["agent", "http", "99999"], "address '99999': port 99999 is out of range (1 to 65535)"],
    [["agent", "http", "3000", "--all"], "--all belongs to agent start"],
    [["agent", "http", "3000", "--web-addr", "4040"], "--web-addr: must be host:port"],
    [["agent", "http", "3000", "--bogus"], "unknown flag '--bogus'"],
    [["agent", "fly"], "unknown agent command 'fly' (agent commands: http, start, config)"],
  ])("%j is an error: %s", async (argv, message) => {
    const command = await build(argv);
    expect(command.kind).toBe("error");
    expect(command.kind === "error" && command.message).toContain(message);
  });
});

describe("tollgate agent start", () => {
  const config = "tunnels:\n  web:\n    addr: 3000\n  api:\n    addr: 4000\n    inspect: false\n";

  it("starts the named tunnels, or all with --all", async () => {
    const cwd = await dirWith({ "agent.yml": config });
    const named = await build(["agent", "start", "api"], cwd);
    expect(named.kind === "run" && named.tunnels.map((t: { name: string }) => t.name)).toEqual(["api"]);
    const all = await build(["agent", "start", "--all", "--config", "agent.yml"], cwd);
    expect(all.kind === "run" && all.tunnels.map((t: { name: string }) => t.name)).toEqual(["web", "api"]);
  });

  it.each([
    [[], "name the tunnels to start or pass --all (tunnels in"],
    [["nope"], "no tunnel 'nope' in"],
    [["web", "--all"], "give tunnel names, --all or --none: one of them, not --all and tunnel names"],
    [["web", "--subdomain", "x"], "--subdomain belongs to agent http"],
    [["web", "--pooling-enabled"], "--pooling-enabled belongs to agent http; set it in the config file"],
  ])("%j is an error: %s", async (args, message) => {
    const cwd = await dirWith({ "agent.yml": config });
    const command = await build(["agent", "start", ...args], cwd);
    expect(command.kind === "error" && command.message).toContain(message);
  });

  it("reports a bad config file with file, line and key", async () => {
    const cwd = await dirWith({ "agent.yml": "tunnels:\n  web:\n    adr: 3000\n" });
    const command = await build(["agent", "start", "--all"], cwd);
    expect(command.kind === "error" && command.message).toBe(
      `${join(cwd, "agent.yml")}:2: tunnels.web.addr: is required\n${join(cwd, "agent.yml")}:3: tunnels.web.adr: unknown key`,
    );
  });
});

describe("small parts", () => {
  it("backs off exponentially up to the maximum, with jitter taken off", () => {
    const none = { random: () => 0 };
    expect([1, 2, 3, 4, 10].map((attempt) => backoffDelay(attempt, none))).toEqual([500, 1000, 2000, 4000, 30000]);
    expect(backoffDelay(1, { random: () => 1, jitter: 0.2 })).toBe(400);
  });

  it("interpolates quantiles of sorted durations", () => {
    expect(quantile([], 0.5)).toBe(0);
    expect(quantile([10, 20, 30, 40], 0.5)).toBe(25);
    expect(quantile([10, 20, 30, 40], 0.99)).toBe(40);
  });

  it("writes logfmt lines, quoting what needs it", () => {
    expect(formatRecord("logfmt", "info", "tunnel online", { name: "web", err: "a b" }, new Date(0))).toBe(
      't=1970-01-01T00:00:00.000Z lvl=info msg="tunnel online" name=web err="a b"\n',
    );
  });
});
