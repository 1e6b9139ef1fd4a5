/**
 * What a traffic policy's circuit-breaker action may ask of the gateway: whether a request may pass a circuit,
 * and where the upstream's answer goes once it arrives. The gateway answers from the same isolate memory and
 * CircuitBreaker objects as a route's circuit_breaker module (src/gateway/modules/breaker-client.ts).
 */

import type { BreakerSpec, BreakerStatus, BreakerView } from "./circuit.ts";

/** Names one circuit of an action: its object is per (ingress instance, scope, action). */
export interface CircuitRef {
  /** The route or tunnel the policy belongs to (`route:<edge>/<route>`, `tunnel:<tunnel id>`). */
  readonly scope: string;
  /** The action's position in its policy, e.g. `inbound[0].actions[1]`. */
  readonly action: string;
}

/**
 * What a request finds at a circuit. `open`: it is open (`view.openUntil`: when a probe may pass; `now`: by the
 * clock the memory keeps). Otherwise the request may reach the upstream, and `report` takes the upstream's status
 * (a promise only when the caller must wait for it: the answer of a half-open probe decides the next request).
 * `state` is `unavailable` when the circuit's object could not be asked: the request passes, nothing is recorded.
 */
export type CircuitPassage =
  | { readonly open: true; readonly view: BreakerView; readonly now: number }
  | { readonly open: false; readonly state: BreakerStatus | "unavailable"; report(upstreamStatus: number): Promise<void> | undefined };

export interface CircuitBreakers {
  enter(circuit: CircuitRef, spec: BreakerSpec): Promise<CircuitPassage>;
}
