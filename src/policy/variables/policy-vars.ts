/** `vars.*` (as ngrok's): what `set-vars` actions wrote, a map of names to values of any type. */

import { DYN, map, STRING } from "../cel-types.ts";
import type { VariableFamily } from "./family.ts";

const NONE: ReadonlyMap<string, unknown> = new Map();

export const policyVarsVariables: VariableFamily = {
  types: { vars: map(STRING, DYN) },
  readers: { vars: (exchange) => exchange.policyVars ?? NONE },
};
