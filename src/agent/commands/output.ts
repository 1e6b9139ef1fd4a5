/** `--log`, `--log-format`, `--log-level` and the config's log keys → how the running agent reports. */

import { LOG_FORMATS, LOG_LEVELS, type AgentConfig } from "../settings/schema.ts";
import { MAX_ARGUMENT_LENGTH, type FlagValues, type OutputPlan } from "./command.ts";

export type OutputResult = { ok: true; output: OutputPlan } | { ok: false; message: string };

/**
 * `style` "agent" keeps the `tollgate agent …` behaviour: `--log term` is the status screen, `--log logfmt`
 * lines on stdout, and with no log configured lines go to stdout when there is no screen. ngrok's commands
 * log nothing unless told to, as ngrok does.
 */
export function outputPlan(values: FlagValues, config: AgentConfig, style: "agent" | "ngrok"): OutputResult {
  const format = values["log-format"] ?? config.log_format;
  if (!(LOG_FORMATS as readonly string[]).includes(format)) return { ok: false, message: `--log-format must be logfmt, json or term, got '${format}'` };
  const level = values["log-level"] ?? config.log_level;
  if (!(LOG_LEVELS as readonly string[]).includes(level)) return { ok: false, message: `--log-level must be debug, info, warn, error or crit, got '${level}'` };
  const common = { format: format as OutputPlan["format"], level: level as OutputPlan["level"] };
  const screen = config.console_ui === "iftty" ? "auto" : config.console_ui;

  const log = values.log;
  if (log !== undefined) {
    if (log === "") return { ok: false, message: "--log must be stdout, stderr, false or a file path, got ''" };
    if (log.length > MAX_ARGUMENT_LENGTH) return { ok: false, message: `--log: a file path is at most ${MAX_ARGUMENT_LENGTH} characters, got ${log.length}` };
    if (style === "agent" && log === "term") return { ok: true, output: { ...common, screen: true, destination: false } };
    if (style === "agent" && log === "logfmt") return { ok: true, output: { ...common, format: "logfmt", screen: false, destination: "stdout" } };
    return { ok: true, output: { ...common, screen, destination: log === "false" ? false : log } };
  }
  const destination = config.log ?? (style === "agent" ? undefined : false);
  return { ok: true, output: { ...common, screen, destination } };
}
