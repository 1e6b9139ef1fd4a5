/** Turns zod issues into policy issues with the wording our error messages promise. */

import type { z } from "zod";
import type { PathSegment, PolicyIssue } from "./issues.ts";

function valueAt(root: unknown, path: readonly PathSegment[]): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a map";
  return typeof value === "string" ? `string ${JSON.stringify(value)}` : `${typeof value} ${String(value)}`;
}

const ARTICLE: Record<string, string> = { array: "a list", object: "a map", record: "a map", number: "a number", string: "a string", boolean: "a boolean" };

export function fromZodIssues(
  issues: readonly z.core.$ZodIssue[],
  input: unknown,
  place: (path: PathSegment[]) => Pick<PolicyIssue, "file" | "line">,
  prefix: readonly PathSegment[] = [],
): PolicyIssue[] {
  const out: PolicyIssue[] = [];
  const pathKey = (issue: z.core.$ZodIssue) => JSON.stringify(issue.path.filter((segment) => typeof segment !== "symbol"));
  // zod still runs length checks on a value of the wrong type ("must have at most 10 elements" for a string);
  // once the type is wrong, that is the only thing worth saying about the value.
  const wrongType = new Set(issues.filter((issue) => issue.code === "invalid_type").map(pathKey));
  for (const issue of issues) {
    if (issue.code !== "invalid_type" && wrongType.has(pathKey(issue))) continue;
    const path = issue.path.filter((segment): segment is PathSegment => typeof segment !== "symbol");
    const full = [...prefix, ...path];
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) out.push({ ...place([...full, key]), path: [...full, key], message: "unknown key" });
      continue;
    }
    const value = valueAt(input, path);
    let message = issue.message;
    if (issue.code === "invalid_union" && "discriminator" in issue && issue.discriminator) {
      const options = (issue as { options?: unknown[] }).options ?? [];
      message =
        value === undefined
          ? `is required (one of ${options.join(", ")})`
          : `unknown action type ${JSON.stringify(value)} (expected one of ${options.join(", ")})`;
    } else if (issue.code === "invalid_type") {
      if (value === undefined) message = "is required";
      else if (message.startsWith("Invalid input")) message = `must be ${ARTICLE[issue.expected] ?? issue.expected}, got ${describe(value)}`;
      else message = `${message}, got ${describe(value)}`;
    } else if (issue.code === "invalid_value") {
      message = message.startsWith("Invalid input")
        ? `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}, got ${describe(value)}`
        : `${message}, got ${describe(value)}`;
    } else if (issue.code === "invalid_key") {
      // A record key failed its own schema: say what is wrong with the key, not "Invalid key in record".
      message = issue.issues[0]?.message ?? message;
    }
    out.push({ ...place(full), path: full, message });
  }
  // zod reports in schema order; a reader goes down the file.
  return out.sort((a, b) => (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER));
}
