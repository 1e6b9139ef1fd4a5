import { mkdir, mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { Agent } from "../../src/agent/agent.ts";
import { runCli } from "../../src/agent/cli.ts";
import { buildCommand } from "../../src/agent/commands/build-command.ts";
import { formatRecord, openLog } from "../../src/agent/status/agent-log.ts";
import { AGENT_VERSION } from "../../src/agent/version.ts";

async function dirWith(files: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-ngrok-cli-"));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

const build = (
  argv: string[],
  cwd = tmpdir(),
  env: Record<string, string> = { XDG_CONFIG_HOME: join(tmpdir(), "tollgate-no-such-home") },
  invokedAs?: string,
) => buildCommand(argv, { cwd, env, invokedAs });

function io(cwd: string, env: Record<string, string>, extra: Partial<Parameters<typeof runCli>[1]> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      cwd,
      env,
      signal: new AbortController().signal,
      ...extra,
    },
  };
}

describe("ngrok's command line", () => {
  it("`start --none --log=stdout` (what the ngrok npm package runs) is an agent with no tunnels logging to stdout", async () => {
    const command = await build(["start", "--none", "--log=stdout"]);
    expect(command).toMatchObject({ kind: "run", tunnels: [], output: { destination: "stdout", format: "logfmt", screen: "auto" } });
  });

  it("`start --none --log stdout --config FILE --authtoken T --region eu` (what pyngrok runs) takes the token as the API key and records the region", async () => {
    const cwd = await dirWith({ "ngrok.yml": 'version: "2"\nweb_addr: 127.0.0.1:4041\n' });
    const command = await build(["start", "--none", "--log", "stdout", "--config", "ngrok.yml", "--authtoken", "tok_1", "--region", "eu"], cwd);
    expect(command).toMatchObject({ kind: "run", config: { api_key: "tok_1", region: "eu", web_addr: "127.0.0.1:4041" } });
  });

  it("`http 3000` logs nothing by default, as ngrok does", async () => {
    expect(await build(["http", "3000"])).toMatchObject({ kind: "run", tunnels: [{ name: "command_line" }], output: { destination: false } });
  });

  it("merges repeated and comma-separated --config files, later files winning and tunnels merged by name", async () => {
    const cwd = await dirWith({
      "a.yml": "version: 2\nauthtoken: from-a\ntunnels:\n  web: {addr: 3000}\n  api: {addr: 4000}\n",
      "b.yml": "version: 3\nagent:\n  authtoken: from-b\ntunnels:\n  api: {addr: 5000}\n",
      "c.yml": "inspect_db_size: 1000\n",
    });
    const command = await build(["start", "--all", "--config", "a.yml", "--config", "b.yml,c.yml"], cwd);
    expect(command).toMatchObject({ kind: "run", config: { api_key: "from-b", inspect_db_size: 1000, tunnels: { web: { addr: 3000 }, api: { addr: 5000 } } } });
  });

  it("reads the default config file ($XDG_CONFIG_HOME/tollgate/agent.yml) when it exists", async () => {
    const home = await dirWith();
    await mkdir(join(home, "tollgate"));
    await writeFile(join(home, "tollgate", "agent.yml"), "version: 3\nagent:\n  authtoken: saved\n");
    expect(await build(["start", "--none"], tmpdir(), { XDG_CONFIG_HOME: home })).toMatchObject({ kind: "run", config: { api_key: "saved" } });
  });

  it("prints its version in ngrok's spelling, as `version` and `--version`", async () => {
    expect(await build(["version"])).toEqual({ kind: "print", text: expect.stringMatching(/^tollgate version \d+\.\d+\.\d+\n$/) });
    expect(await build(["--version"])).toEqual(await build(["version"]));
  });

  it("started as ngrok, names itself ngrok in its version line, from which ngrok's clients read the version", async () => {
    const version = await build(["--version"], tmpdir(), {}, "ngrok");
    expect(version).toEqual({ kind: "print", text: `ngrok version ${AGENT_VERSION}\n` });
    const text = version.kind === "print" ? version.text : "";
    // the ngrok npm package's getVersion(): stdout.replace("ngrok version", "").trim(); pyngrok's get_version():
    // the output, stripped, .split("version ")[1]
    expect(text.replace("ngrok version", "").trim()).toBe(AGENT_VERSION);
    expect(text.trim().split("version ")[1]).toBe(AGENT_VERSION);
  });

  it("started as ngrok, shows ngrok's usage and answers only ngrok's commands", async () => {
    const help = await build(["--help"], tmpdir(), {}, "ngrok");
    expect(help.kind === "print" && help.text).toContain("ngrok start --none|--all|NAME...");
    const agentForm = await build(["agent", "http", "3000"], tmpdir(), {}, "ngrok");
    expect(agentForm.kind === "error" && agentForm.message).toContain("unknown command 'agent'");
  });

  it.each([
    [["http"], "http takes one address (a port, host:port or URL), got 0"],
    [["http", "3000", "--none"], "--none belongs to start"],
    [["http", "3000", "--name", "has space"], "--name: must be 1 to 64 letters, digits or _.- (starting with a letter or digit)"],
    [["start"], "name the tunnels to start or pass --all or --none (tunnels in no config file: none)"],
    [["start", "--none", "--all"], "give tunnel names, --all or --none: one of them, not --all and --none"],
    [["start", "web", "--none"], "give tunnel names, --all or --none: one of them, not --none and tunnel names"],
    [["start", "web"], "no tunnel 'web' in no config file (tunnels: none)"],
    [["start", "--none", "--log-format", "xml"], "--log-format must be logfmt, json or term, got 'xml'"],
    [["start", "--none", "--log-level", "loud"], "--log-level must be debug, info, warn, error or crit, got 'loud'"],
    [["start", "--none", "--log="], "--log must be stdout, stderr, false or a file path, got ''"],
    [["start", "--none", "--region", "EU!"], "--region: must be 1 to 32 of a-z, 0-9 and '-' (e.g. us, eu)"],
    [["start", "--none", "--authtoken", "a b"], "--authtoken: must be 1 to 512 printable characters without spaces"],
    [
      ["start", "--none", "--authtoken", "a", "--api-key", "b"],
      "--api-key and --authtoken differ: both set the agent's one credential (the edge's API key); give one",
    ],
    [["start", "--none", ...Array.from({ length: 9 }, (_, i) => `--config=f${i}.yml`)], "--config: at most 8 config files, got 9"],
    [["start", "--none", "--config", "missing.yml"], "missing.yml: cannot read the config file: no such file"],
    [["authtoken"], "authtoken takes one authtoken, got 0"],
    [["authtoken", "x".repeat(513)], "authtoken: the authtoken must be 1 to 512 printable characters without spaces"],
    [["config", "add-authtoken", "a", "b"], "config add-authtoken takes one authtoken, got 2"],
    [["config", "add-api-key", "a", "--config", "x.yml,y.yml"], "config add-api-key writes one config file; got --config 2 times"],
    [["config", "frobnicate"], "unknown config command 'frobnicate' (check, add-authtoken TOKEN, add-api-key KEY)"],
    [["tunnel", "3000"], "unknown command 'tunnel'"],
    [["agent", "start", "--none"], "--none belongs to start (ngrok's spelling); agent start takes names or --all"],
  ])("%j is an error: %s", async (argv, message) => {
    const command = await build(argv);
    expect(command.kind).toBe("error");
    expect(command.kind === "error" && command.message).toContain(message);
  });
});

describe("config check", () => {
  it("answers ngrok's words for a valid file", async () => {
    const cwd = await dirWith({ "ngrok.yml": "version: 3\nagent:\n  authtoken: x\n" });
    expect(await build(["config", "check", "--config", "ngrok.yml"], cwd)).toEqual({
      kind: "print",
      text: `Valid configuration file at ${join(cwd, "ngrok.yml")}\n`,
    });
  });

  it("reports every problem of every file in one run", async () => {
    const cwd = await dirWith({
      "a.yml": "version: 2\nproxy_url: socks5://localhost:9150\ntunnels:\n  ssh:\n    proto: tcp\n    addr: 22\n",
      "b.yml":
        "version: 3\nendpoints:\n  - name: web\n    upstream: {url: 8080}\n    traffic_policy:\n      on_http_request:\n        - actions:\n            - type: custom-response\n              config: {content: hi}\n",
    });
    const command = await build(["config", "check", "--config", "a.yml,b.yml"], cwd);
    expect(command.kind === "error" && command.message.replaceAll(`${cwd}/`, "")).toBe(
      [
        "a.yml:2: proxy_url: not supported by Tollgate: the agent connects to the edge directly; remove it",
        "a.yml:5: tunnels.ssh.proto: tcp tunnels are not supported: Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)",
        "b.yml:9: endpoints[0].traffic_policy.on_http_request[0].actions[0].config.content: unknown key",
      ].join("\n"),
    );
  });
});

describe("saving the credential", () => {
  it("`authtoken TOKEN` creates the default file (mode 0600) and says ngrok's words", async () => {
    const home = await dirWith();
    const { out, err, io: cliIo } = io(tmpdir(), { XDG_CONFIG_HOME: home });
    expect(await runCli(["authtoken", "tok_123"], cliIo)).toBe(0);
    const file = join(home, "tollgate", "agent.yml");
    expect(out.join("")).toBe(`Authtoken saved to configuration file: ${file}\n`);
    expect(err).toEqual([]);
    expect(parse(await readFile(file, "utf8"))).toEqual({ api_key: "tok_123" });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it("`config add-authtoken` keeps an ngrok v2 file's comments and keys", async () => {
    const cwd = await dirWith({ "ngrok.yml": "# mine\nversion: 2\nauthtoken: old\nweb_addr: 127.0.0.1:4041 # port\n" });
    const { io: cliIo } = io(cwd, {});
    expect(await runCli(["config", "add-authtoken", "new", "--config", "ngrok.yml"], cliIo)).toBe(0);
    expect(await readFile(join(cwd, "ngrok.yml"), "utf8")).toBe("# mine\nversion: 2\nauthtoken: new\nweb_addr: 127.0.0.1:4041 # port\n");
  });

  it("in an ngrok v3 file sets agent.authtoken, and api_key too when present (one credential in Tollgate)", async () => {
    const cwd = await dirWith({ "ngrok.yml": "version: 3\nagent:\n  api_key: old\n" });
    const { out, io: cliIo } = io(cwd, {});
    expect(await runCli(["config", "add-authtoken", "new", "--config", "ngrok.yml"], cliIo)).toBe(0);
    expect(parse(await readFile(join(cwd, "ngrok.yml"), "utf8"))).toEqual({ version: 3, agent: { api_key: "new", authtoken: "new" } });
    expect(out.join("")).toContain("Authtoken saved to configuration file: ");
  });

  it("leaves a file with broken YAML alone and says so", async () => {
    const cwd = await dirWith({ "ngrok.yml": "a: [\n" });
    const { err, io: cliIo } = io(cwd, {});
    expect(await runCli(["authtoken", "x", "--config", "ngrok.yml"], cliIo)).toBe(1);
    expect(err.join("")).toContain(`${join(cwd, "ngrok.yml")}: invalid YAML, not changed:`);
  });
});

/** An agent that never comes online, for runs stopped at once (the CLI's side is under test, not the agent). */
function idleAgent(stop: () => Promise<void>): Agent {
  return {
    version: "0",
    config: { server_addr: "http://edge", web_allow_hosts: [] },
    apiUrl: undefined,
    ready: new Promise(() => undefined),
    session: { status: { state: "connecting", reconnects: 0 }, onStatus: () => () => undefined },
    tunnels: { list: () => [], onChange: () => () => undefined, addTap: () => undefined },
    stop,
  } as unknown as Agent;
}

const aborted = () => {
  const controller = new AbortController();
  controller.abort();
  return controller.signal;
};

describe("ngrok's keys that mean nothing here", () => {
  const FILE = "version: 2\nupdate_check: false\nconsole_ui_color: transparent\n";
  const IGNORED = ["update_check: ignored: Tollgate does not update itself (npm does)", "console_ui_color: ignored: the status screen takes"];

  it("config check names each on a line of its own, then says the file is valid", async () => {
    const cwd = await dirWith({ "ngrok.yml": FILE });
    const { out, err, io: cliIo } = io(cwd, {});
    expect(await runCli(["config", "check", "--config", "ngrok.yml"], cliIo)).toBe(0);
    const lines = out.join("").trimEnd().split("\n");
    expect(lines).toEqual([
      expect.stringContaining(`ngrok.yml:2: ${IGNORED[0]}`),
      expect.stringContaining(`ngrok.yml:3: ${IGNORED[1]}`),
      `Valid configuration file at ${join(cwd, "ngrok.yml")}`,
    ]);
    expect(err).toEqual([]);
  });

  it("a run with a log writes each as a warn record there, leaving stderr empty (ngrok's clients take stderr for a failed start)", async () => {
    const cwd = await dirWith({ "ngrok.yml": FILE });
    const { out, err, io: cliIo } = io(cwd, {}, { signal: aborted(), startAgent: async () => idleAgent(async () => undefined) });
    expect(await runCli(["start", "--none", "--config", "ngrok.yml", "--log", "stdout"], cliIo)).toBe(0);
    const warnings = out
      .join("")
      .split("\n")
      .filter((line) => line.includes('msg="config key ignored"'));
    expect(warnings).toEqual([
      expect.stringMatching(
        /lvl=warn msg="config key ignored" file=\S+ngrok\.yml line=2 key=update_check reason="Tollgate does not update itself \(npm does\)"$/,
      ),
      expect.stringMatching(/lvl=warn msg="config key ignored" file=\S+ngrok\.yml line=3 key=console_ui_color reason=/),
    ]);
    expect(err).toEqual([]);
  });

  it("a run without a log says each on stderr", async () => {
    const cwd = await dirWith({ "ngrok.yml": FILE });
    const { err, io: cliIo } = io(cwd, {}, { signal: aborted(), startAgent: async () => idleAgent(async () => undefined) });
    expect(await runCli(["start", "--none", "--config", "ngrok.yml"], cliIo)).toBe(0);
    expect(err).toEqual([
      `tollgate: ${join(cwd, "ngrok.yml")}:2: ${IGNORED[0]}\n`,
      expect.stringContaining(`tollgate: ${join(cwd, "ngrok.yml")}:3: ${IGNORED[1]}`),
    ]);
  });
});

describe("runCli", () => {
  it("leaves the alternate screen even when stopping the agent throws", async () => {
    const fakeAgent = idleAgent(() => Promise.reject(new Error("stop failed")));
    const { out, io: cliIo } = io(tmpdir(), {}, { signal: aborted(), startAgent: async () => fakeAgent });
    await expect(runCli(["agent", "http", "3000", "--log", "term"], cliIo)).rejects.toThrow("stop failed");
    expect(out.join("")).toContain("\x1b[?1049h");
    expect(out[out.length - 1]).toBe("\x1b[?25h\x1b[?1049l");
  });
});

describe("log records", () => {
  it("in json carry the same fields as in logfmt", () => {
    const now = new Date(0);
    expect(formatRecord("json", "info", "starting web service", { obj: "web", addr: "127.0.0.1:4040" }, now)).toBe(
      '{"t":"1970-01-01T00:00:00.000Z","lvl":"info","msg":"starting web service","obj":"web","addr":"127.0.0.1:4040"}\n',
    );
    expect(formatRecord("logfmt", "info", "starting web service", { obj: "web", addr: "127.0.0.1:4040" }, now)).toBe(
      't=1970-01-01T00:00:00.000Z lvl=info msg="starting web service" obj=web addr=127.0.0.1:4040\n',
    );
  });

  it("that cannot go to their file say so once on stderr, in the name the program was started as", async () => {
    const dir = await dirWith();
    const err: string[] = [];
    const sink = { write: (text: string) => err.push(text) };
    const log = openLog({ destination: dir, format: "logfmt", level: "info", stdout: sink, stderr: sink, cwd: dir, program: "ngrok" });
    log.write("info", "one");
    log.write("info", "two");
    await log.close().catch(() => undefined);
    expect(err).toEqual([`ngrok: cannot write the log file ${dir}: EISDIR: illegal operation on a directory, open '${dir}'\n`]);
  });
});
