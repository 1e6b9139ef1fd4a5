#!/usr/bin/env node
// wrangler's [build] command (wrangler.toml): checks policies/ as `npm run policy:check` does, then bundles them.
// `wrangler deploy` and `versions upload` (and so `npm run build`, a dry-run deploy) stop on a broken policy with
// its located messages, so it is never uploaded. Under `wrangler dev` and `wrangler types` the check is skipped:
// it takes seconds (it loads wrangler to read TUNNEL_DOMAIN) and would slow every reload, and a dev Worker whose
// policies do not load already answers every request with the same located messages.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const command = process.env.WRANGLER_COMMAND;
if (command !== "dev" && command !== "types") {
  const check = spawnSync(process.execPath, ["--import", "tsx", join(root, "scripts", "policy-check.ts"), root, "--quiet"], { stdio: "inherit", cwd: root });
  if (check.status !== 0) process.exit(check.status ?? 1);
}
await import("./bundle-policies.mjs");
