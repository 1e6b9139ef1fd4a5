/**
 * `tollgate agent …` from argv to a plan: which config, which tunnels, which output. Nothing here starts
 * anything, so every way a command line can be wrong is testable.
 */

import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { compilePolicy } from "../../policy/compile.ts";
import { formatIssue, type PolicyIssue } from "../../policy/issues.ts";
import { readSource } from "../../policy/source.ts";
import { loadAgentConfig, parseAgentConfig } from "../settings/load.ts";
import { tunnelDefinitionSchema, type AgentConfig, type TunnelDefinition } from "../settings/schema.ts";
import { fromZodIssues } from "../../policy/zod-issues.ts";

export const USAGE = `Tollgate local agent: tunnels from the edge to services on this machine.

Usage:
  tollgate agent http <addr> [options]          one http tunnel to addr (port, host:port or URL)
  tollgate agent start [NAME...] [--all] [options]
                                                tunnels of the config file, by name or all
  tollgate agent config check [--config FILE]   validate a config file
  tollgate --version

Options:
  --config FILE             agent config file (YAML; default agent.yml for start/check)
  --server-addr URL         the edge (default http://127.0.0.1:8787, the local \`npm start\`)
  --api-key KEY             API key (default: the development key of \`npm start\`)
  --web-addr HOST:PORT      agent API address (default 127.0.0.1:4040; "false" turns it off)
  --log term|logfmt         live status screen or log lines (default: term on a terminal)
agent http only:
  --name NAME               tunnel name (default command_line)
  --subdomain LABEL         public host label wanted (default: a random one)
  --inspect=false           do not capture requests of this tunnel
  --traffic-policy-file F   traffic policy (YAML or JSON) for the tunnel

Environment: TOLLGATE_SERVER_ADDR and TOLLGATE_API_KEY are used when the flags are not given.
`;

export type LogMode = "term" | "logfmt" | "auto";

export type AgentCommand =
  | { kind: "run"; config: AgentConfig; tunnels: Array<{ name: string; definition: TunnelDefinition }>; log: LogMode }
  | { kind: "check"; file: string; tunnels: string[] }
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "error"; message: string };

export interface CommandEnvironment {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

const OPTIONS = {
  config: { type: "string" },
  "server-addr": { type: "string" },
  "api-key": { type: "string" },
  "web-addr": { type: "string" },
  log: { type: "string" },
  name: { type: "string" },
  subdomain: { type: "string" },
  inspect: { type: "string" },
  "traffic-policy-file": { type: "string" },
  all: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const;

function issuesText(issues: readonly PolicyIssue[]): string {
  return issues.map(formatIssue).join("\n");
}

export async function buildAgentCommand(argv: readonly string[], { cwd, env }: CommandEnvironment): Promise<AgentCommand> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    return { kind: "error", message: `${(error as Error).message}\n\n${USAGE}` };
  }
  const { values, positionals } = parsed;
  if (values.version) return { kind: "version" };
  if (values.help || positionals.length === 0) return { kind: "help" };
  if (positionals[0] !== "agent") return { kind: "error", message: `unknown command '${positionals[0]}'\n\n${USAGE}` };
  const [, sub, ...rest] = positionals;
  const log = values.log ?? "auto";
  if (log !== "term" && log !== "logfmt" && log !== "auto") return { kind: "error", message: `--log must be term or logfmt, got '${log}'` };

  if (sub === "config" && rest[0] === "check") {
    const file = resolve(cwd, values.config ?? "agent.yml");
    const loaded = await loadAgentConfig(file);
    if (!loaded.ok) return { kind: "error", message: issuesText(loaded.issues) };
    return { kind: "check", file, tunnels: Object.keys(loaded.config.tunnels) };
  }
  if (sub !== "http" && sub !== "start") return { kind: "error", message: `unknown agent command '${sub ?? ""}'\n\n${USAGE}` };

  // Agent settings: the config file (required for start), then environment, then flags.
  let fileConfig: unknown = {};
  let configFile: string | undefined;
  if (values.config !== undefined || sub === "start") {
    configFile = resolve(cwd, values.config ?? "agent.yml");
    let text: string;
    try {
      text = await readFile(configFile, "utf8");
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
      return { kind: "error", message: `${configFile}: cannot read the config file: ${reason}` };
    }
    const source = readSource(text, configFile);
    if (!source.ok) return { kind: "error", message: issuesText(source.issues) };
    const checked = parseAgentConfig(source.document.value, configFile, source.document.lineOf);
    if (!checked.ok) return { kind: "error", message: issuesText(checked.issues) };
    fileConfig = source.document.value ?? {};
  }
  const overrides: Record<string, unknown> = {};
  const serverAddr = values["server-addr"] ?? env.TOLLGATE_SERVER_ADDR;
  if (serverAddr !== undefined) overrides.server_addr = serverAddr;
  const apiKey = values["api-key"] ?? env.TOLLGATE_API_KEY;
  if (apiKey !== undefined) overrides.api_key = apiKey;
  if (values["web-addr"] !== undefined) overrides.web_addr = values["web-addr"] === "false" ? false : values["web-addr"];
  // The file alone was valid, so what fails now came from a flag or the environment.
  const merged = parseAgentConfig({ ...(fileConfig as Record<string, unknown>), ...overrides });
  if (!merged.ok) return { kind: "error", message: merged.issues.map((issue) => `--${formatIssue(issue).replace("_", "-")}`).join("\n") };
  const config = merged.config;

  if (sub === "http") {
    if (rest.length !== 1) return { kind: "error", message: `agent http takes one address (a port, host:port or URL), got ${rest.length}\n\n${USAGE}` };
    if (values.all) return { kind: "error", message: "--all belongs to agent start" };
    const definition: Record<string, unknown> = { proto: "http", addr: rest[0] };
    if (values.subdomain !== undefined) definition.subdomain = values.subdomain;
    if (values.inspect !== undefined) {
      if (values.inspect !== "true" && values.inspect !== "false") return { kind: "error", message: `--inspect must be true or false, got '${values.inspect}'` };
      definition.inspect = values.inspect === "true";
    }
    if (values["traffic-policy-file"] !== undefined) {
      const policyFile = resolve(cwd, values["traffic-policy-file"]);
      let text: string;
      try {
        text = await readFile(policyFile, "utf8");
      } catch (error) {
        return { kind: "error", message: `${policyFile}: cannot read the traffic policy file: ${(error as Error).message}` };
      }
      const source = readSource(text, policyFile);
      if (!source.ok) return { kind: "error", message: issuesText(source.issues) };
      const compiled = compilePolicy(source.document.value, { file: policyFile, lineOf: source.document.lineOf });
      if (!compiled.ok) return { kind: "error", message: issuesText(compiled.issues) };
      definition.traffic_policy = source.document.value;
    }
    const checked = tunnelDefinitionSchema.safeParse(definition);
    if (!checked.success) {
      const issues = fromZodIssues(checked.error.issues, definition, () => ({}));
      return { kind: "error", message: issues.map((issue) => `${issue.path.join(".") === "addr" ? `address '${rest[0]}'` : issue.path.join(".")}: ${issue.message}`).join("\n") };
    }
    return { kind: "run", config, tunnels: [{ name: values.name ?? "command_line", definition: checked.data }], log };
  }

  for (const flag of ["name", "subdomain", "inspect", "traffic-policy-file"] as const) {
    if (values[flag] !== undefined) return { kind: "error", message: `--${flag} belongs to agent http; set it in the config file for agent start` };
  }
  const available = Object.keys(config.tunnels);
  if (values.all && rest.length > 0) return { kind: "error", message: "give tunnel names or --all, not both" };
  if (!values.all && rest.length === 0) {
    return { kind: "error", message: `name the tunnels to start or pass --all (tunnels in ${configFile}: ${available.join(", ") || "none"})` };
  }
  const names = values.all ? available : rest;
  for (const name of names) {
    if (!config.tunnels[name]) return { kind: "error", message: `no tunnel '${name}' in ${configFile} (tunnels: ${available.join(", ") || "none"})` };
  }
  return { kind: "run", config, tunnels: names.map((name) => ({ name, definition: config.tunnels[name] })), log };
}
