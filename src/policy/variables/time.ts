/** `time.now` (as ngrok's): the current UTC time, RFC 3339, as a string (`timestamp(time.now)` makes it a timestamp). */

import { record, STRING } from "../cel-types.ts";
import type { VariableFamily } from "./family.ts";

export const TIME = record("time", { now: STRING });

export const timeVariables: VariableFamily = {
  types: { time: TIME },
  // Read when an expression reads it, once per bindings snapshot.
  readers: { time: () => new Map([["now", new Date().toISOString()]]) },
};
