/**
 * argv → a plan. Tollgate's own forms (`tollgate agent http|start|config check`) and ngrok's command line
 * (`http`, `start`, `config check|add-authtoken|add-api-key`, `authtoken`, `version`), which is all the
 * program answers to when started under the name `ngrok`. Nothing here starts anything, so every way a
 * command line can be wrong is testable.
 */

import { parseArgs } from "node:util";
import { AGENT_VERSION } from "../version.ts";
import { error, OPTIONS, type Command, type CommandEnvironment, type FlagValues } from "./command.ts";
import { configCheckCommand, saveCredentialCommand } from "./config-command.ts";
import { httpCommand } from "./http-command.ts";
import { startCommand } from "./start-command.ts";
import { flagMistake, helpHint, unknownCommandMessage, unsupportedProtoMessage } from "./mistakes.ts";
import { NGROK_USAGE, USAGE } from "./usage.ts";

/** Whether the program was started as ngrok (a symlink or a file named `ngrok`). */
export function isNgrokName(invokedAs: string | undefined): boolean {
  return invokedAs !== undefined && /^ngrok(\.exe|\.cmd|\.mjs|\.js)?$/i.test(invokedAs);
}

/** The name the program answers to in its version line and messages: the one it was started as. */
export function programName(invokedAs: string | undefined): "ngrok" | "tollgate" {
  return isNgrokName(invokedAs) ? "ngrok" : "tollgate";
}

const COMMANDS = ["http", "start", "config", "authtoken", "version", "help"] as const;
const AGENT_COMMANDS = ["http", "start", "config"] as const;
const CONFIG_COMMANDS = ["check", "add-authtoken", "add-api-key"] as const;

export async function buildCommand(argv: readonly string[], environment: CommandEnvironment): Promise<Command> {
  const program = programName(environment.invokedAs);
  const asNgrok = program === "ngrok";
  const usage = asNgrok ? NGROK_USAGE : USAGE;
  const fail = (message: string) => error(`${message}\n${helpHint(program)}`);
  const flagProblem = flagMistake(argv);
  if (flagProblem !== undefined) return fail(flagProblem);
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (failure) {
    // flagMistake saw every flag as known and used right, so this is parseArgs finding what it did not.
    return fail((failure as Error).message);
  }
  const { values, positionals } = parsed as { values: FlagValues & { help?: boolean; version?: boolean }; positionals: string[] };
  const [first, ...rest] = positionals;
  // "<name> version <semver>", as ngrok prints it: the ngrok npm package strips "ngrok version" from it and
  // pyngrok keeps what follows "version ", so both read the bare version.
  if (values.version || first === "version") return { kind: "print", text: `${program} version ${AGENT_VERSION}\n` };
  if (values.help || first === undefined || first === "help") return { kind: "print", text: usage };

  switch (first) {
    case "http":
      return httpCommand(rest, values, environment, "ngrok", helpHint(program));
    case "start":
      return startCommand(rest, values, environment, "ngrok");
    case "authtoken":
      return saveCredentialCommand(rest, values, environment, "authtoken", "authtoken");
    case "config": {
      const [sub, ...args] = rest;
      if (sub === "check" && args.length === 0) return configCheckCommand(values, environment, "ngrok");
      if (sub === "add-authtoken") return saveCredentialCommand(args, values, environment, "config add-authtoken", "authtoken");
      if (sub === "add-api-key") return saveCredentialCommand(args, values, environment, "config add-api-key", "api_key");
      if (sub === undefined) return fail(`config needs a subcommand: ${program} config check | add-authtoken TOKEN | add-api-key KEY`);
      if (sub === "check") return fail(`config check takes no arguments (files come with --config FILE), got '${args.join(" ")}'`);
      return fail(unknownCommandMessage("config command", sub, args, CONFIG_COMMANDS, `${program} config `, "check, add-authtoken TOKEN, add-api-key KEY"));
    }
    case "tcp":
    case "tls":
      return fail(unsupportedProtoMessage(first, program, rest));
    case "agent":
      if (!asNgrok) return agentForm(rest, values, environment, fail);
  }
  return fail(unknownCommandMessage("command", first, rest, asNgrok ? COMMANDS : [...COMMANDS, "agent"], `${program} `));
}

function agentForm(
  [sub, ...rest]: string[],
  values: FlagValues,
  environment: CommandEnvironment,
  fail: (message: string) => Command,
): Promise<Command> | Command {
  if (values.none) return fail("--none belongs to start (ngrok's spelling); agent start takes names or --all");
  if (sub === "config") {
    if (rest[0] === "check" && rest.length === 1) return configCheckCommand(values, environment, "agent");
    if (rest.length === 0) return fail("agent config needs a subcommand: tollgate agent config check [--config FILE]");
    if (rest[0] === "check") return fail(`agent config check takes no arguments (files come with --config FILE), got '${rest.slice(1).join(" ")}'`);
    return fail(unknownCommandMessage("agent config command", rest[0], rest.slice(1), ["check"], "tollgate agent config "));
  }
  if (sub === "http") return httpCommand(rest, values, environment, "agent", helpHint("tollgate"));
  if (sub === "start") return startCommand(rest, values, environment, "agent");
  if (sub === "tcp" || sub === "tls") return fail(unsupportedProtoMessage(sub, "tollgate agent", rest));
  if (sub === undefined) return fail("agent needs a command: tollgate agent http <addr> | start [NAME...] [--all] | config check");
  return fail(unknownCommandMessage("agent command", sub, rest, AGENT_COMMANDS, "tollgate agent "));
}
