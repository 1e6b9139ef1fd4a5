/** Reads and validates the agent config file; every problem comes back with file, line and key path. */

import { readFile } from "node:fs/promises";
import { compilePolicy } from "../../policy/compile.ts";
import { formatIssue, type PathSegment, type PolicyIssue } from "../../policy/issues.ts";
import { readSource } from "../../policy/source.ts";
import { fromZodIssues } from "../../policy/zod-issues.ts";
import { agentConfigSchema, namedTunnelDefinitionSchema, type AgentConfig, type NamedTunnelDefinition } from "./schema.ts";

export type ConfigResult = { ok: true; config: AgentConfig } | { ok: false; issues: PolicyIssue[] };

/** Validates a parsed config value (also used for flags-only runs, with `{}`). */
export function parseAgentConfig(
  value: unknown,
  file?: string,
  lineOf?: (path: readonly PathSegment[]) => number | undefined,
): ConfigResult {
  const place = (path: PathSegment[]) => ({ file, line: lineOf?.(path) });
  const parsed = agentConfigSchema.safeParse(value ?? {});
  if (!parsed.success) return { ok: false, issues: fromZodIssues(parsed.error.issues, value, place) };
  const issues: PolicyIssue[] = [];
  for (const [name, tunnel] of Object.entries(parsed.data.tunnels)) {
    if (tunnel.traffic_policy === undefined) continue;
    const compiled = compilePolicy(tunnel.traffic_policy, { file, lineOf, prefix: ["tunnels", name, "traffic_policy"] });
    if (!compiled.ok) issues.push(...compiled.issues);
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, config: parsed.data };
}

export async function loadAgentConfig(file: string): Promise<ConfigResult> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    return { ok: false, issues: [{ file, path: [], message: `cannot read the config file: ${reason}` }] };
  }
  const source = readSource(text, file);
  if (!source.ok) return source;
  return parseAgentConfig(source.document.value, file, source.document.lineOf);
}

export type DefinitionResult = { ok: true; tunnel: NamedTunnelDefinition } | { ok: false; message: string };

/** Validates a tunnel definition sent to the agent API; the message names the field. */
export function parseTunnelDefinition(value: unknown): DefinitionResult {
  const parsed = namedTunnelDefinitionSchema.safeParse(value);
  if (!parsed.success) {
    return { ok: false, message: fromZodIssues(parsed.error.issues, value, () => ({})).map(formatIssue).join("; ") };
  }
  if (parsed.data.traffic_policy !== undefined) {
    const compiled = compilePolicy(parsed.data.traffic_policy, { prefix: ["traffic_policy"] });
    if (!compiled.ok) return { ok: false, message: compiled.issues.map(formatIssue).join("; ") };
  }
  return { ok: true, tunnel: parsed.data };
}

export { formatIssue };
