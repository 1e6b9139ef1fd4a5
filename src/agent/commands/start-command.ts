/** `tollgate start --none|--all|NAME…` and `tollgate agent start [NAME…] [--all]`: tunnels of the config files. */

import { defaultConfigFile } from "../settings/default-config.ts";
import { resolveSettings } from "./agent-settings.ts";
import { error, MAX_TUNNEL_NAMES, type Command, type CommandEnvironment, type FlagValues } from "./command.ts";
import { outputPlan } from "./output.ts";

export async function startCommand(names: readonly string[], values: FlagValues, { cwd, env }: CommandEnvironment, style: "agent" | "ngrok"): Promise<Command> {
  const http = style === "agent" ? "agent http" : "http";
  for (const flag of ["name", "subdomain", "pooling-enabled", "inspect", "traffic-policy-file"] as const) {
    if (values[flag] !== undefined) return error(`--${flag} belongs to ${http}; set it in the config file for ${style === "agent" ? "agent start" : "start"}`);
  }
  if (names.length > MAX_TUNNEL_NAMES) return error(`start takes at most ${MAX_TUNNEL_NAMES} tunnel names, got ${names.length}`);
  const choices = [values.all && "--all", values.none && "--none", names.length > 0 && "tunnel names"].filter(Boolean);
  if (choices.length > 1) return error(`give tunnel names, --all or --none: one of them, not ${choices.join(" and ")}`);

  const settings = await resolveSettings({
    values,
    cwd,
    env,
    defaultFile: style === "agent" ? `${cwd}/agent.yml` : defaultConfigFile(env),
    defaultRequired: style === "agent",
  });
  if (!settings.ok) return error(settings.message);
  const { config, files, notices } = settings;
  const output = outputPlan(values, config, style);
  if (!output.ok) return error(output.message);

  const available = Object.keys(config.tunnels);
  const where = files.join(", ") || "no config file";
  if (choices.length === 0) {
    return error(`name the tunnels to start or pass --all${style === "ngrok" ? " or --none" : ""} (tunnels in ${where}: ${available.join(", ") || "none"})`);
  }
  const chosen = values.none ? [] : values.all ? available : names;
  for (const name of chosen) {
    if (!config.tunnels[name]) return error(`no tunnel '${name}' in ${where} (tunnels: ${available.join(", ") || "none"})`);
  }
  return { kind: "run", config, tunnels: chosen.map((name) => ({ name, definition: config.tunnels[name] })), output: output.output, notices };
}
