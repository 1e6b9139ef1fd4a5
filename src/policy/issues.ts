/** Validation issues of policy and gateway files: where (file, line, path) and what. */

export type PathSegment = string | number;

export interface PolicyIssue {
  readonly file?: string;
  readonly line?: number;
  /** Path inside the document, e.g. ["inbound", 0, "actions", 0, "config", "rate"]. */
  readonly path: readonly PathSegment[];
  readonly message: string;
}

/** `inbound[0].actions[0].config.rate` */
export function formatPath(path: readonly PathSegment[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(segment)) out += out === "" ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** `policies/api.yaml:12: inbound[0].actions[0].config.rate: must be a multiple of 10s` */
export function formatIssue(issue: PolicyIssue): string {
  const where = issue.file ? `${issue.file}${issue.line ? `:${issue.line}` : ""}: ` : "";
  const path = issue.path.length > 0 ? `${formatPath(issue.path)}: ` : "";
  return `${where}${path}${issue.message}`;
}
