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
import { NGROK_USAGE, USAGE } from "./usage.ts";

/** Whether the program was started as ngrok (a symlink or a file named `ngrok`). */
export function isNgrokName(invokedAs: string | undefined): boolean {
  return invokedAs !== undefined && /^ngrok(\.exe|\.cmd|\.mjs|\.js)?$/i.test(invokedAs);
}

export async function buildCommand(argv: readonly string[], environment: CommandEnvironment): Promise<Command> {
  const asNgrok = isNgrokName(environment.invokedAs);
  const usage = asNgrok ? NGROK_USAGE : USAGE;
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (failure) {
    return error(`${(failure as Error).message}\n\n${usage}`);
  }
  const { values, positionals } = parsed as { values: FlagValues & { help?: boolean; version?: boolean }; positionals: string[] };
  const [first, ...rest] = positionals;
  if (values.version || first === "version") return { kind: "print", text: `tollgate version ${AGENT_VERSION}\n` };
  if (values.help || first === undefined || first === "help") return { kind: "print", text: usage };

  switch (first) {
    case "http":
      return httpCommand(rest, values, environment, "ngrok", usage);
    case "start":
      return startCommand(rest, values, environment, "ngrok");
    case "authtoken":
      return saveCredentialCommand(rest, values, environment, "authtoken", "authtoken");
    case "config": {
      const [sub, ...args] = rest;
      if (sub === "check" && args.length === 0) return configCheckCommand(values, environment, "ngrok");
      if (sub === "add-authtoken") return saveCredentialCommand(args, values, environment, "config add-authtoken", "authtoken");
      if (sub === "add-api-key") return saveCredentialCommand(args, values, environment, "config add-api-key", "api_key");
      return error(`unknown config command '${rest.join(" ")}' (check, add-authtoken TOKEN, add-api-key KEY)\n\n${usage}`);
    }
    case "agent":
      if (!asNgrok) return agentForm(rest, values, environment);
  }
  return error(`unknown command '${first}'\n\n${usage}`);
}

function agentForm([sub, ...rest]: string[], values: FlagValues, environment: CommandEnvironment): Promise<Command> | Command {
  if (values.none) return error("--none belongs to start (ngrok's spelling); agent start takes names or --all");
  if (sub === "config" && rest[0] === "check" && rest.length === 1) return configCheckCommand(values, environment, "agent");
  if (sub === "http") return httpCommand(rest, values, environment, "agent", USAGE);
  if (sub === "start") return startCommand(rest, values, environment, "agent");
  return error(`unknown agent command '${[sub, ...rest].join(" ")}'\n\n${USAGE}`);
}
