/** `tollgate http <addr>` and `tollgate agent http <addr>`: one http tunnel from the command line. */

import { resolve } from "node:path";
import { compilePolicy } from "../../policy/compile.ts";
import { readSource } from "../../policy/source.ts";
import { fromZodIssues } from "../../policy/zod-issues.ts";
import { readBoundedFile } from "../settings/bounded-file.ts";
import { defaultConfigFile } from "../settings/default-config.ts";
import { tunnelDefinitionSchema, tunnelNameSchema } from "../settings/schema.ts";
import { resolveSettings } from "./agent-settings.ts";
import { error, issuesText, type Command, type CommandEnvironment, type FlagValues } from "./command.ts";
import { outputPlan } from "./output.ts";

/**
 * Largest --traffic-policy-file read (bytes). The policy it holds must serialize to at most MAX_POLICY_BYTES
 * (16 KiB) of JSON; its YAML text may run longer with comments, indentation and block scalars, so 4 × that.
 * A file past this cannot be a policy the edge takes unless it is mostly comments.
 */
const MAX_TRAFFIC_POLICY_FILE_BYTES = 64 * 1024;

export async function httpCommand(
  args: readonly string[],
  values: FlagValues,
  { cwd, env }: CommandEnvironment,
  style: "agent" | "ngrok",
  hint: string,
): Promise<Command> {
  const spelled = style === "agent" ? "agent http" : "http";
  if (args.length !== 1) return error(`${spelled} takes one address (a port, host:port or URL), got ${args.length}\n${hint}`);
  if (values.all) return error(`--all belongs to ${style === "agent" ? "agent start" : "start"}`);
  if (values.none) return error("--none belongs to start");

  const settings = await resolveSettings({ values, cwd, env, defaultFile: style === "ngrok" ? defaultConfigFile(env) : undefined, defaultRequired: false });
  if (!settings.ok) return error(settings.message);
  const output = outputPlan(values, settings.config, style);
  if (!output.ok) return error(output.message);

  const definition: Record<string, unknown> = { proto: "http", addr: args[0] };
  if (values.subdomain !== undefined) definition.subdomain = values.subdomain;
  if (values["pooling-enabled"]) definition.pooling_enabled = true;
  if (values.inspect !== undefined) {
    if (values.inspect !== "true" && values.inspect !== "false") return error(`--inspect must be true or false, got '${values.inspect}'`);
    definition.inspect = values.inspect === "true";
  }
  if (values["traffic-policy-file"] !== undefined) {
    const policyFile = resolve(cwd, values["traffic-policy-file"]);
    const read = await readBoundedFile(policyFile, MAX_TRAFFIC_POLICY_FILE_BYTES, "traffic policy file");
    if (!read.ok) return error(`${policyFile}: ${read.message}`);
    const source = readSource(read.text, policyFile);
    if (!source.ok) return error(issuesText(source.issues));
    const compiled = compilePolicy(source.document.value, { file: policyFile, lineOf: source.document.lineOf });
    if (!compiled.ok) return error(issuesText(compiled.issues));
    definition.traffic_policy = source.document.value;
  }
  const checked = tunnelDefinitionSchema.safeParse(definition);
  if (!checked.success) {
    const issues = fromZodIssues(checked.error.issues, definition, () => ({}));
    return error(
      issues.map((issue) => `${issue.path.join(".") === "addr" ? `address '${args[0]}'` : `--${issue.path.join(".")}`}: ${issue.message}`).join("\n"),
    );
  }
  const name = values.name ?? "command_line";
  const nameOk = tunnelNameSchema.safeParse(name);
  if (!nameOk.success) return error(`--name: ${nameOk.error.issues[0]?.message}`);
  return { kind: "run", config: settings.config, tunnels: [{ name, definition: checked.data }], output: output.output, notices: settings.notices };
}
