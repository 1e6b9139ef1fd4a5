// In a checkout (no bundle in build/agent/): runs the agent's TypeScript source through tsx, a devDependency.
import { register } from "tsx/esm/api";

register();
export const { main } = await import("../src/agent/main.ts");
