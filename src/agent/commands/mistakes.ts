/**
 * Command-line mistakes said in the agent's own words: unknown or misused flags (instead of Node's parseArgs
 * text), unknown commands with a "did you mean", and tcp/tls, which a Workers edge cannot carry.
 */

import { parseArgs } from "node:util";
import { nearestName } from "../../nearest-name.ts";
import { WORKERS_HTTP_ONLY } from "../settings/ngrok-config.ts";
import { OPTIONS } from "./command.ts";

/** The names test/agent/cli-mistakes.test.ts knows them by; the distance and its bounds live in nearest-name.ts. */
export { editDistance, nearestName as closest } from "../../nearest-name.ts";

/** The line that ends every command-line error instead of the whole help. */
export function helpHint(program: string): string {
  return `Run '${program} --help' for the commands and flags.`;
}

/**
 * The first flag problem of `argv`, in words: an unknown flag (with the nearest known one), a value missing
 * or one given to a flag that takes none. undefined when every flag is known and used right.
 */
export function flagMistake(argv: readonly string[]): string | undefined {
  const { tokens } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: false, tokens: true });
  const known = Object.keys(OPTIONS);
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const option = (OPTIONS as Record<string, { type: "string" | "boolean"; short?: string }>)[token.name];
    if (option === undefined) {
      const guess = token.rawName.startsWith("--") ? nearestName(token.name, known) : undefined;
      return `unknown flag '${token.rawName}'${guess ? `: did you mean --${guess}?` : ""}`;
    }
    if (option.type === "string" && token.value === undefined) return `${token.rawName} needs a value (${token.rawName} VALUE or ${token.rawName}=VALUE)`;
    if (option.type === "string" && !token.inlineValue && token.value?.startsWith("-")) {
      return `${token.rawName} needs a value, but the next argument '${token.value}' is a flag (write ${token.rawName}=${token.value} if it is the value)`;
    }
    if (option.type === "boolean" && token.value !== undefined) return `${token.rawName} takes no value (got '${token.value}')`;
  }
  return undefined;
}

/** `tcp`/`tls` as a command (`command` as typed, e.g. "tollgate agent"): what ngrok offers and a Workers edge cannot carry. */
export function unsupportedProtoMessage(proto: "tcp" | "tls", command: string, args: readonly string[]): string {
  const instead = args.length === 1 && !args[0].startsWith("-") ? `${command} http ${args[0]}` : `${command} http <addr>`;
  return `${proto} tunnels are not supported: ${WORKERS_HTTP_ONLY}. For an HTTP service on that port: ${instead}`;
}

/**
 * "unknown command 'htpt'", with the nearest command, or `http <addr>` for a bare port or URL; with no near
 * one, the list (`listed`, else "<what>s: <candidates>").
 */
export function unknownCommandMessage(
  what: string,
  word: string,
  rest: readonly string[],
  candidates: readonly string[],
  spelled: string,
  listed = `${what}s: ${candidates.join(", ")}`,
): string {
  if (candidates.includes("http") && /^(\d{1,5}|[\w.-]+:\d{1,5}|https?:\/\/\S+)$/.test(word))
    return `unknown ${what} '${word}': did you mean '${spelled}http ${word}'?`;
  const guess = nearestName(word, candidates);
  if (guess === undefined) return `unknown ${what} '${word}' (${listed})`;
  return `unknown ${what} '${word}': did you mean '${[`${spelled}${guess}`, ...rest].join(" ")}'?`;
}
