#!/usr/bin/env node
/**
 * Commit subjects of at most 72 characters, so `git log --oneline` reads as the project's table of contents
 * (CONTRIBUTING.md); the reasoning and the figures go in the body. Checks the commits after BASE only: the
 * history before it is exempt. `node scripts/check-commits.mjs [base]`.
 */

import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";

/** The first commit checked is the one after this: the history up to it was written before the rule. */
export const BASE = "29a5ea0";
export const MAX_SUBJECT_CHARS = 72;

/**
 * The commits whose subject is too long, from `git log --format=%h%x00%s` output: `{ hash, subject }`.
 * Characters are counted as code points, as an editor counts them.
 */
export function overlongSubjects(log, max = MAX_SUBJECT_CHARS) {
  return log
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const [hash, subject = ""] = line.split("\u0000");
      return { hash, subject };
    })
    .filter(({ subject }) => [...subject].length > max);
}

function git(...args) {
  return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function main(base) {
  try {
    git("cat-file", "-e", `${base}^{commit}`);
  } catch {
    console.error(`check-commits: commit ${base} is not in this clone (a shallow clone?); fetch the history to check subjects`);
    process.exit(1);
  }
  const overlong = overlongSubjects(git("log", "--format=%h%x00%s", `${base}..HEAD`));
  if (overlong.length === 0) return;
  console.error(`check-commits: ${overlong.length} commit subject(s) after ${base} exceed ${MAX_SUBJECT_CHARS} characters:`);
  for (const { hash, subject } of overlong) console.error(`  ${hash} (${[...subject].length}): ${subject}`);
  console.error("Say what changed in the subject; the reasoning and the figures go in the body (CONTRIBUTING.md).");
  process.exit(1);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) main(process.argv[2] ?? BASE);
