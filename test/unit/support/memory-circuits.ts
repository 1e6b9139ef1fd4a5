/** CircuitBreakers for policy tests: circuits in memory on the real state machine (src/breaker/circuit.ts), at a clock the test sets. */

import { admit, closedCircuit, isUpstreamError, record, view, type BreakerSpec, type BreakerState } from "../../../src/breaker/circuit.ts";
import type { CircuitBreakers, CircuitPassage, CircuitRef } from "../../../src/breaker/circuits.ts";

export class MemoryCircuits implements CircuitBreakers {
  readonly circuits = new Map<string, BreakerState>();

  constructor(public now: number) {}

  async enter(circuit: CircuitRef, spec: BreakerSpec): Promise<CircuitPassage> {
    const name = JSON.stringify([circuit.scope, circuit.action]);
    const { admission, state } = admit(this.circuits.get(name) ?? closedCircuit, this.now, spec);
    this.circuits.set(name, state);
    if (!admission.allowed) return { open: true, view: { ...view(state, this.now, spec), openUntil: this.now + admission.retryAfterMs }, now: this.now };
    return {
      open: false,
      state: state.status,
      report: (status) => {
        this.circuits.set(name, record(this.circuits.get(name)!, this.now, spec, { error: isUpstreamError(status), probe: admission.probe }));
        return undefined;
      },
    };
  }
}
