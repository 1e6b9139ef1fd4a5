#!/usr/bin/env node
// The `tollgate` command. In a checkout: the agent's TypeScript source through tsx (bin/from-source.mjs, which the
// package does not ship). Installed: the agent bundled at pack time (build/agent/). A checkout never runs the
// bundle, so `npm pack` building and removing build/agent/ cannot change what a running `tollgate` loads.
const { existsSync } = await import("node:fs");
const fromSource = new URL("./from-source.mjs", import.meta.url);
const bundle = new URL("../build/agent/tollgate.mjs", import.meta.url);
if (!existsSync(fromSource) && !existsSync(bundle)) {
  // A tarball packed with scripts off (npm pack --ignore-scripts, or ignore-scripts in an .npmrc) skips the
  // prepack script that bundles the agent. Say so, instead of Node's ERR_MODULE_NOT_FOUND.
  const { basename } = await import("node:path");
  const program = basename(process.argv[1] ?? "tollgate").replace(/\.m?js$/, "");
  process.stderr.write(
    `${program}: this copy of the package has no agent build (build/agent/tollgate.mjs): it was packed with npm's scripts turned off, which skips the prepack script that builds it.\n` +
      "Pack it again in a checkout with plain `npm pack` (or run `npm run build:agent` first), or install the published package: npm install -g tollgate-agent\n",
  );
  process.exit(1);
}
await (await import((existsSync(fromSource) ? fromSource : bundle).href)).main();
