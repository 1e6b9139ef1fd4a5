/** Simulating a candidate policy over a list of requests: see simulate.ts. */

export * from "./bounds.ts";
export { type SimulatedRequest, type SimulationInput, simulationInputSchema } from "./input.ts";
export type { ActionOutcome, ActionTrace, EntryMatch } from "./traced-policy.ts";
export { POLICY_FILE, type SimulatedDecision, type SimulateOptions, type SimulationResult, simulatePolicy } from "./simulate.ts";
