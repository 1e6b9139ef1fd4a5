#!/usr/bin/env node
// The `tollgate` command: runs the TypeScript CLI through tsx (a dependency), so no build step is needed.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/agent/main.ts");
await main();
