// In a checkout: runs the agent's TypeScript source through tsx, a devDependency (bin/tollgate.mjs picks this file when it exists; the package does not ship it).
import { register } from "tsx/esm/api";

register();
export const { main } = await import("../src/agent/main.ts");
