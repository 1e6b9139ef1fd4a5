/** Where the config file lives when none is named: ngrok's commands use a per-user file, as ngrok does. */

import { join } from "node:path";

/** `$XDG_CONFIG_HOME/tollgate/agent.yml`, else `~/.config/tollgate/agent.yml`. */
export function defaultConfigFile(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, "tollgate", "agent.yml");
  const home = env.HOME ?? env.USERPROFILE;
  return home ? join(home, ".config", "tollgate", "agent.yml") : undefined;
}
