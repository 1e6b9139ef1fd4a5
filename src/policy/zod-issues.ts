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
  return `${typeof value === "string" ? "string" : typeof value} ${JSON.stringify(value)}`;
}

const ARTICLE: Record<string, string> = { array: "a list", object: "a map", record: "a map", number: "a number", string: "a string", boolean: "a boolean" };

export function fromZodIssues(
  issues: readonly z.core.$ZodIssue[],
  input: unknown,
  place: (path: PathSegment[]) => Pick<PolicyIssue, "file" | "line">,
  prefix: readonly PathSegment[] = [],
): PolicyIssue[] {
  const out: PolicyIssue[] = [];
  for (const issue of issues) {
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
    } else if (issue.code === "invalid_value" && message.startsWith("Invalid input")) {
      message = `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}, got ${describe(value)}`;
    }
    out.push({ ...place(full), path: full, message });
  }
  return out;
}
