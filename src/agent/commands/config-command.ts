/**
 * `tollgate config check`, `config add-authtoken TOKEN`, `config add-api-key KEY`, `authtoken TOKEN` and
 * `tollgate agent config check`: validate config files, or save the credential into one.
 */

import { defaultConfigFile } from "../settings/default-config.ts";
import { formatNotice, readConfigFile } from "../settings/load.ts";
import { configFilesOf } from "./agent-settings.ts";
import type { PolicyIssue } from "../../policy/issues.ts";
import { CREDENTIAL, error, issuesText, type Command, type CommandEnvironment, type FlagValues } from "./command.ts";

/** Checks every file and reports every problem of every file in one run. */
export async function configCheckCommand(values: FlagValues, { cwd, env }: CommandEnvironment, style: "agent" | "ngrok"): Promise<Command> {
  const named = configFilesOf(values, cwd);
  if (!named.ok) return error(named.message);
  const fallback = style === "agent" ? `${cwd}/agent.yml` : defaultConfigFile(env);
  const files = named.files.length > 0 ? named.files : fallback ? [fallback] : [];
  if (files.length === 0) return error("no config file: pass --config FILE (HOME is not set, so there is no default file)");
  const issues: PolicyIssue[] = [];
  const lines: string[] = [];
  for (const file of files) {
    const read = await readConfigFile(file);
    if (!read.ok) {
      issues.push(...read.issues);
      continue;
    }
    // The keys ignored come first, each on a line of its own, then the verdict on the file.
    lines.push(...read.file.notices.map(formatNotice));
    if (style === "agent") lines.push(`${file}: valid (tunnels: ${Object.keys(read.file.config.tunnels).join(", ") || "none"})`);
    else lines.push(`Valid configuration file at ${file}`);
  }
  if (issues.length > 0) return error(issuesText(issues));
  return { kind: "print", text: `${lines.join("\n")}\n` };
}

/** `authtoken TOKEN` / `config add-authtoken TOKEN` / `config add-api-key KEY` (ngrok's words; one credential in Tollgate). */
export function saveCredentialCommand(
  args: readonly string[],
  values: FlagValues,
  { cwd, env }: CommandEnvironment,
  spelled: string,
  field: "authtoken" | "api_key",
): Command {
  if (args.length !== 1) return error(`${spelled} takes one ${field === "authtoken" ? "authtoken" : "API key"}, got ${args.length}`);
  if (!CREDENTIAL.test(args[0]))
    return error(`${spelled}: the ${field === "authtoken" ? "authtoken" : "API key"} must be 1 to 512 printable characters without spaces`);
  const named = configFilesOf(values, cwd);
  if (!named.ok) return error(named.message);
  if (named.files.length > 1) return error(`${spelled} writes one config file; got --config ${named.files.length} times`);
  const file = named.files[0] ?? defaultConfigFile(env);
  if (file === undefined) return error(`${spelled}: pass --config FILE (HOME is not set, so there is no default file)`);
  return { kind: "save-credential", file, field, value: args[0] };
}
