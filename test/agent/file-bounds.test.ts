import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync } from "node:fs";
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { runCli } from "../../src/agent/cli.ts";
import { buildCommand } from "../../src/agent/commands/build-command.ts";

// The bounds as the docs state them (MAX_CONFIG_FILE_BYTES, MAX_TRAFFIC_POLICY_FILE_BYTES).
const CONFIG_BOUND = 1024 * 1024;
const POLICY_BOUND = 64 * 1024;

const unix = process.platform !== "win32";
// mkfifo(1) is on Linux and macOS; Node has no mkfifo of its own. The FIFO tests skip where it is missing.
const MKFIFO = "mkfifo";
const canMkfifo = (() => {
  try {
    execFileSync(MKFIFO, [join(mkdtempSync(join(tmpdir(), "tollgate-mkfifo-")), "probe")], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

const fifos: string[] = [];
const descriptors: number[] = [];

afterEach(() => {
  // A reader stuck in open() on a FIFO (what the code before this bound did) wakes when a writer opens it,
  // so a failing run ends instead of leaving a thread blocked; with no reader this open fails with ENXIO.
  for (const fifo of fifos.splice(0)) {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {}
  }
  for (const fd of descriptors.splice(0)) closeSync(fd);
});

async function dirWith(files: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-file-bounds-"));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

async function fifoIn(dir: string): Promise<string> {
  const fifo = join(dir, "pipe.yml");
  execFileSync(MKFIFO, [fifo]);
  fifos.push(fifo);
  return fifo;
}

/** Text of exactly `bytes` bytes: `head`, then a comment line filling the rest. */
const sized = (head: string, bytes: number): string => `${head}#${"x".repeat(bytes - head.length - 2)}\n`;

async function run(argv: string[], cwd: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => err.push(text) },
    cwd,
    env: { XDG_CONFIG_HOME: join(cwd, "no-such-home") },
    signal: new AbortController().signal,
  });
  return { code, out: out.join(""), err: err.join("") };
}

const policyError = async (file: string, cwd: string) => {
  const command = await buildCommand(["agent", "http", "3000", "--traffic-policy-file", file], { cwd, env: {} });
  return command.kind === "error" ? command.message : command.kind;
};

describe("a config file that is not a regular file", () => {
  it.skipIf(!unix).each([
    ["/dev/zero", "a character device"],
    ["/dev/urandom", "a character device"],
  ])("`config check --config %s` is refused as %s, exit 2", async (device, kind) => {
    const { code, err } = await run(["config", "check", "--config", device], tmpdir());
    expect(err).toBe(`tollgate: ${device}: cannot read the config file: is ${kind}, not a regular file\n`);
    expect(code).toBe(2);
  });

  it.skipIf(!canMkfifo)("a FIFO with no writer is refused at once, not waited on (skipped where mkfifo is missing)", async () => {
    const dir = await dirWith();
    const fifo = await fifoIn(dir);
    const { code, err } = await run(["config", "check", "--config", fifo], dir);
    expect(err).toBe(`tollgate: ${fifo}: cannot read the config file: is a FIFO (named pipe), not a regular file\n`);
    expect(code).toBe(2);
  });

  it.skipIf(!canMkfifo)("/dev/fd/N naming a pipe is refused as the FIFO it is (skipped where mkfifo is missing)", async () => {
    const dir = await dirWith();
    const fd = openSync(await fifoIn(dir), constants.O_RDONLY | constants.O_NONBLOCK);
    descriptors.push(fd);
    const { code, err } = await run(["config", "check", "--config", `/dev/fd/${fd}`], dir);
    expect(err).toBe(`tollgate: /dev/fd/${fd}: cannot read the config file: is a FIFO (named pipe), not a regular file\n`);
    expect(code).toBe(2);
  });

  it("a directory is refused by name", async () => {
    const dir = await dirWith();
    await mkdir(join(dir, "conf.d"));
    const { code, err } = await run(["start", "--none", "--config", "conf.d"], dir);
    expect(err).toBe(`tollgate: ${join(dir, "conf.d")}: cannot read the config file: is a directory, not a regular file\n`);
    expect(code).toBe(2);
  });
});

describe("the config file's byte bound", () => {
  it("a file of exactly 1 MiB is read; one byte more exceeds the limit of 1048576 bytes", async () => {
    const dir = await dirWith({ "at.yml": sized("tunnels: {}\n", CONFIG_BOUND), "over.yml": sized("tunnels: {}\n", CONFIG_BOUND + 1) });
    expect((await run(["config", "check", "--config", "at.yml"], dir)).code).toBe(0);
    const { code, err } = await run(["config", "check", "--config", "over.yml"], dir);
    expect(err).toBe(`tollgate: ${join(dir, "over.yml")}: the config file exceeds the limit of ${CONFIG_BOUND} bytes\n`);
    expect(code).toBe(2);
  });
});

describe("--traffic-policy-file", () => {
  it.skipIf(!unix)("/dev/zero is refused as a character device", async () => {
    expect(await policyError("/dev/zero", tmpdir())).toBe("/dev/zero: cannot read the traffic policy file: is a character device, not a regular file");
  });

  it.skipIf(!canMkfifo)("a FIFO with no writer is refused at once (skipped where mkfifo is missing)", async () => {
    const dir = await dirWith();
    const fifo = await fifoIn(dir);
    expect(await policyError(fifo, dir)).toBe(`${fifo}: cannot read the traffic policy file: is a FIFO (named pipe), not a regular file`);
  });

  it("a directory is refused by name", async () => {
    const dir = await dirWith();
    expect(await policyError(".", dir)).toBe(`${dir}: cannot read the traffic policy file: is a directory, not a regular file`);
  });

  it("a file of exactly 64 KiB is read; one byte more exceeds the limit of 65536 bytes", async () => {
    const dir = await dirWith({ "at.yml": sized("inbound: []\n", POLICY_BOUND), "over.yml": sized("inbound: []\n", POLICY_BOUND + 1) });
    expect(await policyError("at.yml", dir)).toBe("run");
    expect(await policyError("over.yml", dir)).toBe(`${join(dir, "over.yml")}: the traffic policy file exceeds the limit of ${POLICY_BOUND} bytes`);
  });
});

describe("authtoken on a hostile config file", () => {
  it.skipIf(!canMkfifo)("a FIFO is refused, exit 1 (skipped where mkfifo is missing)", async () => {
    const dir = await dirWith();
    const fifo = await fifoIn(dir);
    const { code, err } = await run(["authtoken", "tok", "--config", fifo], dir);
    expect(err).toBe(`tollgate: ${fifo}: cannot read the config file: is a FIFO (named pipe), not a regular file\n`);
    expect(code).toBe(1);
  });

  it("a file one byte over the bound is refused and left alone", async () => {
    const text = sized("version: 2\n", CONFIG_BOUND + 1);
    const dir = await dirWith({ "ngrok.yml": text });
    const { code, err } = await run(["authtoken", "tok", "--config", "ngrok.yml"], dir);
    expect(err).toBe(`tollgate: ${join(dir, "ngrok.yml")}: the config file exceeds the limit of ${CONFIG_BOUND} bytes\n`);
    expect(code).toBe(1);
    expect(await readFile(join(dir, "ngrok.yml"), "utf8")).toBe(text);
  });

  it("a file the token would push past the bound is left alone (start could not read it back)", async () => {
    const text = sized("version: 2\n", CONFIG_BOUND);
    const dir = await dirWith({ "ngrok.yml": text });
    const { code, err } = await run(["authtoken", "tok", "--config", "ngrok.yml"], dir);
    expect(err).toBe(`tollgate: ${join(dir, "ngrok.yml")}: with the authtoken the config file would exceed the limit of ${CONFIG_BOUND} bytes; not changed\n`);
    expect(code).toBe(1);
    expect(await readFile(join(dir, "ngrok.yml"), "utf8")).toBe(text);
  });

  it("a YAML alias bomb gets config check's located error, exit 1, not a stack trace", async () => {
    // Each line names the one before ten times: 10^5 values from five short lines.
    const tens = (alias: string) => `[${Array(10).fill(alias).join(", ")}]`;
    const bomb = `a: &a ${tens("x")}\nb: &b ${tens("*a")}\nc: &c ${tens("*b")}\nd: &d ${tens("*c")}\ne: ${tens("*d")}\n`;
    const dir = await dirWith({ "ngrok.yml": bomb });
    const file = join(dir, "ngrok.yml");
    const check = await run(["config", "check", "--config", "ngrok.yml"], dir);
    expect(check.err).toBe(`tollgate: ${file}: invalid YAML: Excessive alias count indicates a resource exhaustion attack\n`);
    const saved = await run(["authtoken", "tok", "--config", "ngrok.yml"], dir);
    expect(saved.err).toBe(check.err);
    expect(saved.code).toBe(1);
  });
});

describe("authtoken's write", () => {
  it("a symlink planted at the old predictable temporary name is not followed: the victim is untouched, the config written", async () => {
    const dir = await dirWith({ "ngrok.yml": "version: 2\n" });
    const victim = join(await dirWith({ "theirs.txt": "someone else's\n" }), "theirs.txt");
    const planted = join(dir, `ngrok.yml.${process.pid}.tmp`);
    await symlink(victim, planted);
    const { code, err } = await run(["authtoken", "tok", "--config", "ngrok.yml"], dir);
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(await readFile(victim, "utf8")).toBe("someone else's\n");
    const config = join(dir, "ngrok.yml");
    expect((await lstat(config)).isFile()).toBe(true);
    expect(parse(await readFile(config, "utf8"))).toEqual({ version: 2, authtoken: "tok" });
    expect((await stat(config)).mode & 0o777).toBe(0o600);
    // Nothing left behind but the planted link itself.
    expect((await readdir(dir)).sort()).toEqual(["ngrok.yml", `ngrok.yml.${process.pid}.tmp`]);
  });

  it("a symlinked config stays a symlink: the token is written into the link's target", async () => {
    const dotfiles = await dirWith({ "agent.yml": "# mine\nversion: 2\n" });
    const dir = await dirWith();
    await symlink(join(dotfiles, "agent.yml"), join(dir, "ngrok.yml"));
    const { code } = await run(["config", "add-authtoken", "tok", "--config", "ngrok.yml"], dir);
    expect(code).toBe(0);
    expect(await readlink(join(dir, "ngrok.yml"))).toBe(join(dotfiles, "agent.yml"));
    expect(await readFile(join(dotfiles, "agent.yml"), "utf8")).toBe("# mine\nversion: 2\nauthtoken: tok\n");
    expect(await readdir(dotfiles)).toEqual(["agent.yml"]);
    expect(await readdir(dir)).toEqual(["ngrok.yml"]);
  });

  it("a symlink to nothing is refused rather than replaced by a file", async () => {
    const dir = await dirWith();
    await symlink(join(dir, "gone", "agent.yml"), join(dir, "ngrok.yml"));
    const { code, err } = await run(["authtoken", "tok", "--config", "ngrok.yml"], dir);
    expect(err).toBe(
      `tollgate: ${join(dir, "ngrok.yml")}: cannot write the config file: it is a symbolic link to ${join(dir, "gone", "agent.yml")}, which does not exist\n`,
    );
    expect(code).toBe(1);
    expect(await readlink(join(dir, "ngrok.yml"))).toBe(join(dir, "gone", "agent.yml"));
  });
});
