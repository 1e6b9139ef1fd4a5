#!/usr/bin/env node
// The `tollgate` command. In a checkout: the agent's TypeScript source through tsx (bin/from-source.mjs, which the
// package does not ship). Installed: the agent bundled at pack time (build/agent/). A checkout never runs the
// bundle, so `npm pack` building and removing build/agent/ cannot change what a running `tollgate` loads.
const { existsSync } = await import("node:fs");
const fromSource = new URL("./from-source.mjs", import.meta.url);
await (await import((existsSync(fromSource) ? fromSource : new URL("../build/agent/tollgate.mjs", import.meta.url)).href)).main();
