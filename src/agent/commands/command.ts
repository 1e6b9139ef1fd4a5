/** What a command line turns into (a plan the CLI carries out), the flags every command shares, and their bounds. */

import { formatIssue, type PolicyIssue } from "../../policy/issues.ts";
import type { AgentConfig, TunnelDefinition } from "../settings/schema.ts";
import type { LogFormat, LogLevel } from "../status/agent-log.ts";

/** How the running agent reports: the status screen and/or log records. */
export interface OutputPlan {
  /** true / false, or "auto": on a terminal unless the log goes to stdout. */
  readonly screen: boolean | "auto";
  /** stdout, stderr, a file, false for none; undefined: stdout when there is no screen. */
  readonly destination: string | false | undefined;
  readonly format: LogFormat;
  readonly level: LogLevel;
}

export type Command =
  | {
      kind: "run";
      config: AgentConfig;
      tunnels: Array<{ name: string; definition: TunnelDefinition }>;
      output: OutputPlan;
      /** Config keys read and ignored, to be said once at start-up. */
      notices: readonly PolicyIssue[];
    }
  | { kind: "print"; text: string }
  | { kind: "save-credential"; file: string; field: "authtoken" | "api_key"; value: string }
  | { kind: "error"; message: string };

export interface CommandEnvironment {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The name the program was started as: "ngrok" makes it ngrok's command line only. */
  readonly invokedAs?: string;
}

export const OPTIONS = {
  config: { type: "string", multiple: true },
  "server-addr": { type: "string" },
  "api-key": { type: "string" },
  authtoken: { type: "string" },
  region: { type: "string" },
  "web-addr": { type: "string" },
  log: { type: "string" },
  "log-format": { type: "string" },
  "log-level": { type: "string" },
  name: { type: "string" },
  subdomain: { type: "string" },
  "pooling-enabled": { type: "boolean" },
  inspect: { type: "string" },
  "traffic-policy-file": { type: "string" },
  all: { type: "boolean" },
  none: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const;

export interface FlagValues {
  config?: string[];
  "server-addr"?: string;
  "api-key"?: string;
  authtoken?: string;
  region?: string;
  "web-addr"?: string;
  log?: string;
  "log-format"?: string;
  "log-level"?: string;
  name?: string;
  subdomain?: string;
  "pooling-enabled"?: boolean;
  inspect?: string;
  "traffic-policy-file"?: string;
  all?: boolean;
  none?: boolean;
}

/** Longest argument taken from the command line (a token, a path, an address). */
export const MAX_ARGUMENT_LENGTH = 4096;
/** Most tunnel names `start` takes. */
export const MAX_TUNNEL_NAMES = 100;
/** An authtoken / API key: 1 to 512 printable ASCII characters without spaces. */
export const CREDENTIAL = /^[\x21-\x7e]{1,512}$/;

export const error = (message: string): Command => ({ kind: "error", message });

export function issuesText(issues: readonly PolicyIssue[]): string {
  return issues.map(formatIssue).join("\n");
}
