/** Reads and validates agent config files (Tollgate's, ngrok v2 or v3); every problem comes back with file, line and key path. */

import { compilePolicy } from "../../policy/compile.ts";
import { formatIssue, type PathSegment, type PolicyIssue } from "../../policy/issues.ts";
import { readSource } from "../../policy/source.ts";
import { fromZodIssues } from "../../policy/zod-issues.ts";
import { readBoundedFile } from "./bounded-file.ts";
import { translateConfig, type ConfigFormat } from "./ngrok-config.ts";
import { agentConfigSchema, namedTunnelDefinitionSchema, type AgentConfig, type NamedTunnelDefinition } from "./schema.ts";

export type ConfigResult = { ok: true; config: AgentConfig } | { ok: false; issues: PolicyIssue[] };

/** Largest config file read (bytes); also the largest `authtoken` writes, so `start` can read back what it saved. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;
/** Most config files one command line may merge (`--config` repeated or comma-separated). */
export const MAX_CONFIG_FILES = 8;

const isMap = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

export interface ParseOptions {
  readonly file?: string;
  readonly lineOf?: (path: readonly PathSegment[]) => number | undefined;
  /** Where a Tollgate path came from in the file (ngrok files name their keys differently). */
  readonly sourcePath?: (path: readonly PathSegment[]) => PathSegment[];
}

/**
 * Validates a config value in Tollgate's shape (also used for flags-only runs, with `{}`). Reports every
 * problem at once: schema issues and those inside each tunnel's traffic policy.
 */
export function parseAgentConfig(
  value: unknown,
  file?: string,
  lineOf?: ParseOptions["lineOf"],
  sourcePath: ParseOptions["sourcePath"] = (path) => [...path],
): ConfigResult {
  const locate = (issue: PolicyIssue): PolicyIssue => {
    const path = sourcePath(issue.path);
    return { ...issue, file, path, line: lineOf?.(path) };
  };
  const issues: PolicyIssue[] = [];
  const parsed = agentConfigSchema.safeParse(value ?? {});
  if (!parsed.success) issues.push(...fromZodIssues(parsed.error.issues, value, () => ({})).map(locate));
  const tunnels = isMap(value) && isMap(value.tunnels) ? value.tunnels : {};
  for (const [name, tunnel] of Object.entries(tunnels)) {
    if (!isMap(tunnel) || !isMap(tunnel.traffic_policy)) continue;
    const compiled = compilePolicy(tunnel.traffic_policy, { prefix: ["tunnels", name, "traffic_policy"] });
    if (!compiled.ok) issues.push(...compiled.issues.map(locate));
  }
  if (issues.length > 0 || !parsed.success) return { ok: false, issues: sortIssues(issues) };
  return { ok: true, config: parsed.data };
}

function sortIssues(issues: PolicyIssue[]): PolicyIssue[] {
  return issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) => (a.issue.line ?? 0) - (b.issue.line ?? 0) || a.index - b.index)
    .map(({ issue }) => issue);
}

export interface ConfigFile {
  readonly file: string;
  readonly format: ConfigFormat;
  /** The file's own settings in Tollgate's shape, before defaults (what merging needs). */
  readonly value: Record<string, unknown>;
  /** The file validated on its own. */
  readonly config: AgentConfig;
  /** ngrok keys read and ignored, located; each message is the reason. */
  readonly notices: PolicyIssue[];
}

export type ConfigFileResult = { ok: true; file: ConfigFile } | { ok: false; issues: PolicyIssue[] };

/** Reads one config file, maps an ngrok file onto Tollgate's shape and validates it, with every problem located. */
export async function readConfigFile(file: string): Promise<ConfigFileResult> {
  const read = await readBoundedFile(file, MAX_CONFIG_FILE_BYTES, "config file");
  if (!read.ok) return { ok: false, issues: [{ file, path: [], message: read.message }] };
  const source = readSource(read.text, file);
  if (!source.ok) return source;
  const { lineOf } = source.document;
  const translation = translateConfig(source.document.value);
  const refused = translation.issues.map((issue) => ({ ...issue, file, line: lineOf(issue.path) }));
  const checked = parseAgentConfig(translation.value, file, lineOf, translation.sourcePath);
  const issues = [...refused, ...(checked.ok ? [] : checked.issues)];
  if (issues.length > 0 || !checked.ok) return { ok: false, issues: sortIssues(issues) };
  const notices = translation.notices.map((notice) => ({ ...notice, file, line: lineOf(notice.path) }));
  return { ok: true, file: { file, format: translation.format, value: translation.value, config: checked.config, notices } };
}

/** Reads one config file (the single-file form of {@link readConfigFiles}). */
export async function loadAgentConfig(file: string): Promise<ConfigResult> {
  const read = await readConfigFile(file);
  return read.ok ? { ok: true, config: read.file.config } : read;
}

/**
 * Merges config files as ngrok does: a later file's settings replace an earlier one's, tunnels merge by
 * name (a later definition of a name replaces the earlier one). Answers the merged value, unvalidated.
 */
export function mergeConfigValues(values: ReadonlyArray<Record<string, unknown>>): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const value of values) {
    for (const [key, entry] of Object.entries(value)) {
      merged[key] = key === "tunnels" && isMap(entry) && isMap(merged.tunnels) ? { ...merged.tunnels, ...entry } : entry;
    }
  }
  return merged;
}

export type DefinitionResult = { ok: true; tunnel: NamedTunnelDefinition } | { ok: false; message: string };

/** Validates a tunnel definition sent to the agent API; the message names the field. */
export function parseTunnelDefinition(value: unknown): DefinitionResult {
  const parsed = namedTunnelDefinitionSchema.safeParse(value);
  if (!parsed.success) {
    return {
      ok: false,
      message: fromZodIssues(parsed.error.issues, value, () => ({}))
        .map(formatIssue)
        .join("; "),
    };
  }
  if (parsed.data.traffic_policy !== undefined) {
    const compiled = compilePolicy(parsed.data.traffic_policy, { prefix: ["traffic_policy"] });
    if (!compiled.ok) return { ok: false, message: compiled.issues.map(formatIssue).join("; ") };
  }
  return { ok: true, tunnel: parsed.data };
}

export { formatIssue };

/** `ngrok.yml:25: update_check: ignored: Tollgate does not update itself (npm does)` */
export function formatNotice(notice: PolicyIssue): string {
  return formatIssue({ ...notice, message: `ignored: ${notice.message}` });
}
