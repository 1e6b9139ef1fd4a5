/** An action's compiled step in a test that expects its config to compile (a problem fails the test, with its message). */

import { type CompiledAction, type ConfigProblem, isConfigProblem } from "../../../src/policy/actions/action.ts";

export function compiledStep(compiled: CompiledAction | ConfigProblem): CompiledAction {
  if (isConfigProblem(compiled)) throw new Error(`the config did not compile: ${compiled.path.join(".")}: ${compiled.message}`);
  return compiled;
}
