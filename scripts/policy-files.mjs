// Reads every policy file (.yaml, .yml, .json) under a policies/ directory: repository path → text.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

function listFiles(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return listFiles(path);
      return /\.(ya?ml|json)$/.test(name) ? [path] : [];
    });
}

/** @param {string} root the repository root; @returns {Record<string, string>} */
export function readPolicyFiles(root) {
  return Object.fromEntries(listFiles(join(root, "policies")).map((path) => [relative(root, path).split("\\").join("/"), readFileSync(path, "utf8")]));
}
