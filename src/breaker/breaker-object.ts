/**
 * CircuitBreaker: the Durable Object holding one route's circuit per ingress instance; a thin shell over
 * circuit.ts. Callers pass their clock (`now`, epoch ms): the isolate that asks decides by the same clock
 * it remembers "open until" by, and tests drive both with one injected clock.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { admit, closedCircuit, record, view, type Admission, type BreakerSpec, type BreakerState, type BreakerView } from "./circuit.ts";

const STORAGE_KEY = "circuit";

export class CircuitBreaker extends DurableObject<Env> {
  private state: BreakerState;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.state = ctx.storage.kv.get<BreakerState>(STORAGE_KEY) ?? closedCircuit;
  }

  admit(spec: BreakerSpec, label: string, now: number): { admission: Admission; view: BreakerView } {
    const result = admit(this.state, now, spec);
    if (result.admission.probe) console.log(`circuit breaker ${label}: half-open, letting one probe through`);
    this.save(result.state);
    return { admission: result.admission, view: view(this.state, now, spec) };
  }

  record(spec: BreakerSpec, label: string, outcome: { error: boolean; probe: boolean }, now: number): BreakerView {
    const before = this.state;
    const after = record(before, now, spec, outcome);
    if (before.status !== after.status) {
      if (after.status === "open" && before.status === "closed") {
        const window = view(before, now, spec);
        console.log(
          `circuit breaker ${label}: tripped (${window.errors + (outcome.error ? 1 : 0)} errors in ${window.requests + 1} requests); open for ${spec.trippedMs / 1000}s`,
        );
      } else if (after.status === "open") console.log(`circuit breaker ${label}: probe failed; open again for ${spec.trippedMs / 1000}s`);
      else console.log(`circuit breaker ${label}: probe succeeded; closed`);
    }
    this.save(after);
    return view(after, now, spec);
  }

  private save(next: BreakerState): void {
    if (next === this.state) return;
    this.state = next;
    this.ctx.storage.kv.put(STORAGE_KEY, next);
  }
}
