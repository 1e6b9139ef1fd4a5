#!/usr/bin/env node
// Bundles the local agent (src/agent/main.ts and what it imports) into build/agent/tollgate.mjs, with the
// inspector's static files beside it, so the packed package runs on plain Node: no TypeScript toolchain at
// run time. npm packages stay external (they are the package's dependencies). Run by `npm pack` and
// `npm publish` (prepack), which is why .npmrc leaves npm's scripts on.
import { build } from "esbuild";
import { cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "build", "agent");

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: [join(root, "src/agent/main.ts")],
  outfile: join(out, "tollgate.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  logLevel: "warning",
  banner: { js: "// Tollgate's local agent, bundled from src/agent by scripts/build-agent.mjs. Do not edit." },
});
// inspector-routes.ts reads its assets from new URL("./assets/", import.meta.url): beside the bundle.
cpSync(join(root, "src/agent/inspector/assets"), join(out, "assets"), { recursive: true });
