/** Simulating a candidate policy over a list of requests: see simulate.ts. */

export * from "./bounds.ts";
export { simulationInputSchema } from "./input.ts";
export { type SimulatedDecision, type SimulationResult, simulatePolicy } from "./simulate.ts";
