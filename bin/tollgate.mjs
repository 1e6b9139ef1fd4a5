#!/usr/bin/env node
// The `tollgate` command: the agent bundled at pack time (build/agent/, in an installed package), or in a checkout its TypeScript source through tsx.
await (
  await import(
    new URL(
      (await import("node:fs")).existsSync(new URL("../build/agent/tollgate.mjs", import.meta.url)) ? "../build/agent/tollgate.mjs" : "./from-source.mjs",
      import.meta.url,
    ).href
  )
).main();
