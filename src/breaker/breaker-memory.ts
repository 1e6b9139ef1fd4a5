/**
 * What one isolate remembers of the circuit breakers it has asked about, so that while a circuit is open
 * its requests are rejected without calling the CircuitBreaker object or the upstream, and while it is
 * closed they pass without asking first. The clock is injected; it is also the clock the object decides
 * by (breaker-client.ts passes it along), so one clock rules a request.
 */

import type { BreakerView } from "./circuit.ts";
import { makeRoom } from "../bounded-map.ts";

/**
 * Circuits remembered at most. Names are (ingress instance, route label): an operator's configuration,
 * never client input. Past it the least recently used circuit is forgotten, which only costs an object call.
 */
export const MAX_REMEMBERED_BREAKERS = 1_024;

export interface BreakerMemoryOptions {
  readonly now?: () => number;
  readonly maxEntries?: number;
}

/**
 * `reject`: the circuit is open, answer without calling anything; `pass`: it is closed, call the upstream
 * and report the outcome; `ask`: nothing known, or a probe may be due, so the object must admit the request.
 */
export type BreakerConsultation = { readonly kind: "reject"; readonly view: BreakerView } | { readonly kind: "pass" } | { readonly kind: "ask" };

export class BreakerMemory {
  readonly now: () => number;
  private readonly maxEntries: number;
  private readonly known = new Map<string, BreakerView>();

  constructor({ now = Date.now, maxEntries = MAX_REMEMBERED_BREAKERS }: BreakerMemoryOptions = {}) {
    this.now = now;
    this.maxEntries = Math.max(1, maxEntries);
  }

  /** Circuits remembered right now. */
  get size(): number {
    return this.known.size;
  }

  consult(name: string): BreakerConsultation {
    const last = this.known.get(name);
    if (!last) return { kind: "ask" };
    // Most recently used last, so the first entry is the one to forget.
    this.known.delete(name);
    this.known.set(name, last);
    if (last.status === "closed") return { kind: "pass" };
    return this.now() < last.openUntil ? { kind: "reject", view: last } : { kind: "ask" };
  }

  /** Takes in what the object last said of circuit `name`. */
  learn(name: string, view: BreakerView): void {
    this.known.delete(name);
    makeRoom(this.known, this.maxEntries);
    this.known.set(name, view);
  }
}
