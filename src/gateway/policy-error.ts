/** What a request gets, and what the Worker logs, when the policies it needs do not load: every located message. */

import { ErrorCode, ServiceError } from "../errors.ts";
import { formatIssue, type PolicyIssue } from "../policy/issues.ts";

/** A 500 whose message is `summary` (e.g. "The gateway's policies do not load") and the issues as policy:check prints them. */
export function policyLoadError(summary: string, issues: readonly PolicyIssue[]): ServiceError {
  const messages = issues.map(formatIssue);
  return new ServiceError(500, ErrorCode.internal, `${summary}: ${messages.join("; ")}`, { details: { issues: messages } });
}

/** The log line, written once per isolate and policy. */
export function policyLoadLogLine(issues: readonly PolicyIssue[]): string {
  return `Tollgate: the policies do not load:\n${issues.map(formatIssue).join("\n")}`;
}
