/** The agent's settings for one command: config files (merged), then the environment, then flags. */

import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { formatIssue, type PolicyIssue } from "../../policy/issues.ts";
import { mergeConfigValues, MAX_CONFIG_FILES, parseAgentConfig, readConfigFile } from "../settings/load.ts";
import type { AgentConfig } from "../settings/schema.ts";
import { CREDENTIAL, issuesText, MAX_ARGUMENT_LENGTH, type FlagValues } from "./command.ts";

export interface SettingsRequest {
  readonly values: FlagValues;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The file read when no --config is given. */
  readonly defaultFile: string | undefined;
  /** Whether that file must exist (`agent start`), or is read only if it does (ngrok's commands). */
  readonly defaultRequired: boolean;
}

export type SettingsResult = { ok: true; config: AgentConfig; files: string[]; notices: PolicyIssue[] } | { ok: false; message: string };

/** `--config a.yml --config b.yml,c.yml` → absolute paths, in order. */
export function configFilesOf(values: FlagValues, cwd: string): { ok: true; files: string[] } | { ok: false; message: string } {
  const files = (values.config ?? []).flatMap((value) => value.split(",")).filter((file) => file !== "");
  if (files.length > MAX_CONFIG_FILES) return { ok: false, message: `--config: at most ${MAX_CONFIG_FILES} config files, got ${files.length}` };
  const long = files.find((file) => file.length > MAX_ARGUMENT_LENGTH);
  if (long !== undefined) return { ok: false, message: `--config: a file path is at most ${MAX_ARGUMENT_LENGTH} characters, got ${long.length}` };
  return { ok: true, files: files.map((file) => resolve(cwd, file)) };
}

/** The credential from flags: --api-key and --authtoken name the same thing, so they must agree. */
function credentialFlag(values: FlagValues): { ok: true; value: string | undefined } | { ok: false; message: string } {
  const given = (["api-key", "authtoken"] as const).filter((flag) => values[flag] !== undefined);
  for (const flag of given) {
    if (!CREDENTIAL.test(values[flag]!)) return { ok: false, message: `--${flag}: must be 1 to 512 printable characters without spaces` };
  }
  if (given.length === 2 && values["api-key"] !== values.authtoken)
    return { ok: false, message: "--api-key and --authtoken differ: both set the agent's one credential (the edge's API key); give one" };
  return { ok: true, value: values["api-key"] ?? values.authtoken };
}

export async function resolveSettings({ values, cwd, env, defaultFile, defaultRequired }: SettingsRequest): Promise<SettingsResult> {
  const named = configFilesOf(values, cwd);
  if (!named.ok) return named;
  let files = named.files;
  if (files.length === 0 && defaultFile !== undefined && (defaultRequired || existsSync(defaultFile))) files = [defaultFile];

  const issues: PolicyIssue[] = [];
  const fileValues: Array<Record<string, unknown>> = [];
  const notices: PolicyIssue[] = [];
  for (const file of files) {
    const read = await readConfigFile(file);
    if (read.ok) {
      fileValues.push(read.file.value);
      notices.push(...read.file.notices);
    } else issues.push(...read.issues);
  }
  if (issues.length > 0) return { ok: false, message: issuesText(issues) };

  const credential = credentialFlag(values);
  if (!credential.ok) return credential;
  const overrides: Record<string, unknown> = {};
  const serverAddr = values["server-addr"] ?? (env.TOLLGATE_SERVER_ADDR || undefined);
  if (serverAddr !== undefined) overrides.server_addr = serverAddr;
  const apiKey = credential.value ?? (env.TOLLGATE_API_KEY || undefined);
  if (apiKey !== undefined) overrides.api_key = apiKey;
  if (values["web-addr"] !== undefined) overrides.web_addr = values["web-addr"] === "false" ? false : values["web-addr"];
  if (values.region !== undefined) overrides.region = values.region;

  // Each file alone was valid, so what fails now came from a flag, the environment or the merge.
  const merged = parseAgentConfig({ ...mergeConfigValues(fileValues), ...overrides });
  if (!merged.ok) {
    return {
      ok: false,
      message: merged.issues
        .map((issue) => {
          const key = String(issue.path[0] ?? "");
          if (key in overrides) return `--${formatIssue(issue).replace("_", "-")}`;
          return `${files.length > 1 ? "the merged config files" : (files[0] ?? "config")}: ${formatIssue(issue)}`;
        })
        .join("\n"),
    };
  }
  return { ok: true, config: merged.config, files, notices };
}
