/** The `tollgate` command line: builds a plan from argv, runs the agent until Ctrl-C or a fatal refusal. */

import { startAgent } from "./agent.ts";
import { buildAgentCommand, USAGE } from "./commands/agent-command.ts";
import { logLine, showStatus, type StatusStream } from "./status/status-view.ts";
import { AGENT_VERSION } from "./version.ts";

export interface CliIo {
  readonly stdout: StatusStream;
  readonly stderr: { write(text: string): unknown };
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborting it is Ctrl-C (the bin wires SIGINT and SIGTERM to it). */
  readonly signal: AbortSignal;
}

/** Runs one command; resolves with the process exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const command = await buildAgentCommand(argv, { cwd: io.cwd, env: io.env });
  switch (command.kind) {
    case "help":
      io.stdout.write(USAGE);
      return 0;
    case "version":
      io.stdout.write(`tollgate ${AGENT_VERSION}\n`);
      return 0;
    case "error":
      io.stderr.write(`tollgate: ${command.message}\n`);
      return 2;
    case "check":
      io.stdout.write(`${command.file}: valid (tunnels: ${command.tunnels.join(", ") || "none"})\n`);
      return 0;
    case "run":
      break;
  }

  let agent;
  try {
    agent = await startAgent({ config: command.config, tunnels: command.tunnels });
  } catch (error) {
    io.stderr.write(`tollgate: ${(error as Error).message}\n`);
    return 1;
  }
  const tty = command.log === "term" || (command.log === "auto" && io.stdout.isTTY === true);
  const hideStatus = showStatus(agent, io.stdout, { tty });

  const outcome = await new Promise<{ code: number; message?: string }>((resolve) => {
    if (io.signal.aborted) resolve({ code: 0 });
    io.signal.addEventListener("abort", () => resolve({ code: 0 }), { once: true });
    agent.ready.catch((error: Error) => resolve({ code: 1, message: error.message }));
    agent.session.onStatus((status) => {
      if (status.state === "refused") resolve({ code: 1, message: status.lastError });
    });
  });
  if (!tty) io.stdout.write(logLine("info", "shutting down", { tunnels: agent.tunnels.list().length }));
  await agent.stop();
  hideStatus();
  if (outcome.message) io.stderr.write(`tollgate: ${outcome.message}\n`);
  return outcome.code;
}
