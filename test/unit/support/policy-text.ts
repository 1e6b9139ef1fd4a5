/** Policies written inline in unit tests: text as lines, loaded as a file under policies/. */

import { loadPolicy, type CompiledPolicy } from "../../../src/policy/compile.ts";
import { formatIssue } from "../../../src/policy/issues.ts";

export const POLICY_FILE = "policies/api.yaml";

export const lines = (...text: string[]) => `${text.join("\n")}\n`;

/** Loads a policy that must be valid. */
export function load(text: string): CompiledPolicy {
  const loaded = loadPolicy(text, POLICY_FILE);
  if (!loaded.ok) throw new Error(loaded.issues.map(formatIssue).join("\n"));
  return loaded.policy;
}

/** Every problem of a policy, as `file:line: path: message`; none when it loads. */
export function problems(text: string): string[] {
  const loaded = loadPolicy(text, POLICY_FILE);
  return loaded.ok ? [] : loaded.issues.map(formatIssue);
}
