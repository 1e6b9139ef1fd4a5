import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../src/agent/cli.ts";
import { buildCommand } from "../../src/agent/commands/build-command.ts";
import { closest, editDistance } from "../../src/agent/commands/mistakes.ts";

const env = { XDG_CONFIG_HOME: join(tmpdir(), "tollgate-no-such-home") };
const HINT = "Run 'tollgate --help' for the commands and flags.";
const WORKERS = "Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)";

async function messageOf(argv: string[], invokedAs?: string): Promise<string> {
  const command = await buildCommand(argv, { cwd: tmpdir(), env, invokedAs });
  if (command.kind !== "error") throw new Error(`expected an error, got ${command.kind}`);
  return command.message;
}

describe("command-line mistakes, each with its message", () => {
  it.each([
    [["agent", "tcp", "22"], `tcp tunnels are not supported: ${WORKERS}. For an HTTP service on that port: tollgate agent http 22`],
    [["agent", "tls", "443"], `tls tunnels are not supported: ${WORKERS}. For an HTTP service on that port: tollgate agent http 443`],
    [["tcp", "22"], `tcp tunnels are not supported: ${WORKERS}. For an HTTP service on that port: tollgate http 22`],
    [["htpt", "3000"], "unknown command 'htpt': did you mean 'tollgate http 3000'?"],
    [["agnet", "http", "3000"], "unknown command 'agnet': did you mean 'tollgate agent http 3000'?"],
    [["3000"], "unknown command '3000': did you mean 'tollgate http 3000'?"],
    [["frobnicate"], "unknown command 'frobnicate' (commands: http, start, config, authtoken, version, help, agent)"],
    [["agent", "htp", "3000"], "unknown agent command 'htp': did you mean 'tollgate agent http 3000'?"],
    [["agent", "strat", "web"], "unknown agent command 'strat': did you mean 'tollgate agent start web'?"],
    [["agent"], "agent needs a command: tollgate agent http <addr> | start [NAME...] [--all] | config check"],
    [["agent", "config"], "agent config needs a subcommand: tollgate agent config check [--config FILE]"],
    [["agent", "config", "chek"], "unknown agent config command 'chek': did you mean 'tollgate agent config check'?"],
    [["config"], "config needs a subcommand: tollgate config check | add-authtoken TOKEN | add-api-key KEY"],
    [["config", "add-authtokn", "T"], "unknown config command 'add-authtokn': did you mean 'tollgate config add-authtoken T'?"],
    [["agent", "http", "3000", "--bogus"], "unknown flag '--bogus'"],
    [["agent", "http", "3000", "--subdomian", "x"], "unknown flag '--subdomian': did you mean --subdomain?"],
    [["agent", "http", "3000", "-x"], "unknown flag '-x'"],
    [["agent", "http", "3000", "--name"], "--name needs a value (--name VALUE or --name=VALUE)"],
    [
      ["agent", "http", "3000", "--name", "--inspect=false"],
      "--name needs a value, but the next argument '--inspect=false' is a flag (write --name=--inspect=false if it is the value)",
    ],
    [["agent", "start", "--all=yes"], "--all takes no value (got 'yes')"],
    [["agent", "http"], "agent http takes one address (a port, host:port or URL), got 0"],
  ])("%j: %s", async (argv, message) => {
    expect(await messageOf(argv)).toBe(`${message}\n${HINT}`);
  });

  it("started as ngrok, names ngrok and offers no agent command", async () => {
    expect(await messageOf(["htpt", "3000"], "ngrok")).toBe(
      "unknown command 'htpt': did you mean 'ngrok http 3000'?\nRun 'ngrok --help' for the commands and flags.",
    );
    expect(await messageOf(["agent", "http", "3000"], "ngrok")).toBe(
      "unknown command 'agent' (commands: http, start, config, authtoken, version, help)\nRun 'ngrok --help' for the commands and flags.",
    );
  });

  it("prints one short error on stderr (no parseArgs text, no stray quote, not the whole help) and exits 2", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(["agent", "http", "3000", "--bogus"], {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      cwd: tmpdir(),
      env,
      signal: new AbortController().signal,
    });
    expect(code).toBe(2);
    expect(out).toEqual([]);
    expect(err.join("")).toBe(`tollgate: unknown flag '--bogus'\n${HINT}\n`);
  });

  it("started as ngrok, names itself ngrok on stderr", async () => {
    const err: string[] = [];
    const code = await runCli(["htpt", "3000"], {
      stdout: { write: () => undefined },
      stderr: { write: (text: string) => err.push(text) },
      cwd: tmpdir(),
      env,
      signal: new AbortController().signal,
      invokedAs: "ngrok",
    });
    expect(code).toBe(2);
    expect(err.join("")).toBe("ngrok: unknown command 'htpt': did you mean 'ngrok http 3000'?\nRun 'ngrok --help' for the commands and flags.\n");
  });
});

describe("did you mean", () => {
  it("counts a swap of neighbours as one edit", () => {
    expect(editDistance("htpt", "http")).toBe(1);
    expect(editDistance("htp", "http")).toBe(1);
    expect(editDistance("subdomian", "subdomain")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
  });

  it("suggests only what is one edit away (two for longer words), the nearest first", () => {
    expect(closest("strat", ["http", "start", "config"])).toBe("start");
    expect(closest("HTTP", ["http"])).toBe("http");
    expect(closest("tunnel", ["http", "start", "config"])).toBeUndefined();
    expect(closest("confg", ["config", "check"])).toBe("config");
    expect(closest("cnofgi", ["config"])).toBe("config");
  });
});
