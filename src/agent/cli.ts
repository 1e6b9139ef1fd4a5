/** The `tollgate` (or `ngrok`) command line: builds a plan from argv and carries it out (runs the agent until Ctrl-C or a fatal refusal). */

import { startAgent, type Agent } from "./agent.ts";
import { buildCommand, programName } from "./commands/build-command.ts";
import type { Command } from "./commands/command.ts";
import { formatPath } from "../policy/issues.ts";
import { formatNotice } from "./settings/load.ts";
import { saveCredential } from "./settings/credential-file.ts";
import { logAgent, openLog, type AgentLog } from "./status/agent-log.ts";
import { showStatus, type StatusStream } from "./status/status-view.ts";

export interface CliIo {
  readonly stdout: StatusStream;
  readonly stderr: { write(text: string): unknown };
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborting it is Ctrl-C (the bin wires SIGINT and SIGTERM to it). */
  readonly signal: AbortSignal;
  /** The program's file name as started (`ngrok` makes it ngrok's command line). */
  readonly invokedAs?: string;
  /** Starts the agent (tests pass their own; the default is {@link startAgent}). */
  readonly startAgent?: typeof startAgent;
}

type RunCommand = Extract<Command, { kind: "run" }>;

/** Runs one command; resolves with the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const command = await buildCommand(argv, { cwd: io.cwd, env: io.env, invokedAs: io.invokedAs });
  const program = programName(io.invokedAs);
  switch (command.kind) {
    case "print":
      io.stdout.write(command.text);
      return 0;
    case "error":
      io.stderr.write(`${program}: ${command.message}\n`);
      return 2;
    case "save-credential": {
      const saved = await saveCredential(command.file, command.field, command.value);
      if (!saved.ok) {
        io.stderr.write(`${program}: ${saved.message}\n`);
        return 1;
      }
      // ngrok's words: pyngrok checks the reply for "Authtoken saved", the ngrok npm package waits for any output.
      io.stdout.write(`${command.field === "authtoken" ? "Authtoken" : "API key"} saved to configuration file: ${command.file}\n`);
      return 0;
    }
    case "run":
      return runAgent(command, { ...io, program });
  }
}

async function runAgent({ config, tunnels, output, notices }: RunCommand, io: CliIo & { readonly program: string }): Promise<number> {
  const screen = output.screen === true || (output.screen === "auto" && io.stdout.isTTY === true && output.destination !== "stdout");
  const destination = output.destination ?? (screen ? false : "stdout");
  const log: AgentLog | undefined =
    destination === false
      ? undefined
      : openLog({ destination, format: output.format, level: output.level, stdout: io.stdout, stderr: io.stderr, cwd: io.cwd, program: io.program });
  // Said where the run's own lines go: a record in the log (ngrok's clients take anything on stderr for a
  // failed start), else one line on stderr, before the status screen takes the terminal.
  for (const notice of notices) {
    if (log) log.write("warn", "config key ignored", { file: notice.file, line: notice.line, key: formatPath(notice.path), reason: notice.message });
    else io.stderr.write(`${io.program}: ${formatNotice(notice)}\n`);
  }

  let agent: Agent;
  try {
    agent = await (io.startAgent ?? startAgent)({ config, tunnels });
  } catch (error) {
    log?.write("crit", "command failed", { err: (error as Error).message });
    await log?.close();
    io.stderr.write(`${io.program}: ${(error as Error).message}\n`);
    return 1;
  }

  const stopLogging = log ? logAgent(agent, log) : () => undefined;
  let hideStatus: (() => void) | undefined;
  try {
    if (screen) hideStatus = showStatus(agent, io.stdout, { env: io.env });
    const outcome = await new Promise<{ code: number; message?: string }>((resolve) => {
      if (io.signal.aborted) resolve({ code: 0 });
      io.signal.addEventListener("abort", () => resolve({ code: 0 }), { once: true });
      agent.ready.catch((error: Error) => resolve({ code: 1, message: error.message }));
      agent.session.onStatus((status) => {
        if (status.state === "refused") resolve({ code: 1, message: status.lastError });
      });
    });
    log?.write("info", "shutting down", { tunnels: agent.tunnels.list().length });
    await agent.stop();
    if (outcome.message) {
      log?.write("crit", "command failed", { err: outcome.message });
      hideStatus?.();
      hideStatus = undefined;
      io.stderr.write(`${io.program}: ${outcome.message}\n`);
    }
    return outcome.code;
  } finally {
    // The terminal leaves the alternate screen whatever happened while stopping.
    hideStatus?.();
    stopLogging();
    await log?.close();
  }
}
