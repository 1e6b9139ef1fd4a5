/**
 * Applies circuit breakers around upstreams: a route's circuit_breaker module, and the circuit-breaker actions
 * of traffic policies. Each circuit lives in a CircuitBreaker Durable Object per (ingress instance, route or
 * policy action); the isolate's BreakerMemory remembers "open until T" so that, while tripped, requests are
 * rejected without calling the object or the upstream. One path for both: `enterCircuit`.
 */

import type { Env } from "../../env.ts";
import type { AfterResponse } from "../../policy/exchange.ts";
import { isUpstreamError, type BreakerSpec, type BreakerStatus } from "../../breaker/circuit.ts";
import type { CircuitBreakers, CircuitPassage } from "../../breaker/circuits.ts";
import { circuitOpenAnswer } from "../../breaker/open-answer.ts";
import type { BreakerMemory } from "../../breaker/breaker-memory.ts";

/**
 * Where circuits live: the CircuitBreaker objects (env), the isolate's memory of them, and where recording a
 * non-probe outcome goes (`afterResponse`; absent, `report` answers a promise for every outcome).
 */
export interface CircuitHome {
  readonly env: Env;
  readonly memory: BreakerMemory;
  readonly afterResponse?: AfterResponse;
}

/** One circuit: its object's `name`, how logs name it (`label`), and its thresholds. */
export interface NamedCircuit {
  readonly name: string;
  readonly label: string;
  readonly spec: BreakerSpec;
}

/** Whether a request may pass `circuit`. */
export async function enterCircuit({ env, memory, afterResponse }: CircuitHome, { name, label, spec }: NamedCircuit): Promise<CircuitPassage> {
  const known = memory.consult(name);
  if (known.kind === "reject") return { open: true, view: known.view, now: memory.now() };
  const stub = env.CIRCUIT_BREAKER.get(env.CIRCUIT_BREAKER.idFromName(name));
  let probe = false;
  let state: BreakerStatus = "closed";
  if (known.kind === "ask") {
    const now = memory.now();
    let decided: Awaited<ReturnType<typeof stub.admit>>;
    try {
      decided = await stub.admit(spec, label, now);
    } catch (error) {
      // The breaker protects the upstream; it must not become the outage. Without its object, pass.
      console.error(`circuit breaker ${label}: unavailable, request passes: ${(error as Error).message}`);
      return { open: false, state: "unavailable", report: () => undefined };
    }
    const { admission, view } = decided;
    memory.learn(name, view);
    if (!admission.allowed) return { open: true, view: { ...view, openUntil: now + admission.retryAfterMs }, now };
    probe = admission.probe;
    state = view.status;
  }
  return {
    open: false,
    state,
    report(upstreamStatus) {
      const recorded = stub.record(spec, label, { error: isUpstreamError(upstreamStatus), probe }, memory.now()).then(
        (view) => memory.learn(name, view),
        (error) => console.error(`circuit breaker ${label}: recording failed: ${(error as Error).message}`),
      );
      // A probe's outcome must be known before the next request decides; other outcomes need not delay the answer.
      if (probe || !afterResponse) return recorded;
      afterResponse.waitUntil(recorded);
      return undefined;
    },
  };
}

/**
 * Calls the upstream through the route's circuit (named by ingress instance and route label), or answers 503
 * ERR_SVC_303 while it is open: a page when `request` (the client's) prefers HTML, the JSON envelope otherwise
 * and when no request is given.
 */
export async function withCircuitBreaker(
  home: CircuitHome,
  { ingress, label, spec }: { readonly ingress: string; readonly label: string; readonly spec: BreakerSpec },
  call: () => Promise<Response>,
  request?: Request,
): Promise<Response> {
  const passage = await enterCircuit(home, { name: JSON.stringify([ingress, label]), label, spec });
  if (passage.open) {
    return circuitOpenAnswer({ of: `route ${label}`, configuredBy: "the route's circuit_breaker module" }, passage.view, passage.now, request);
  }
  const response = await call();
  await passage.report(response.status);
  return response;
}

/**
 * The circuits of traffic policies' circuit-breaker actions in ingress instance `ingress`. A circuit is named by
 * its scope (a route, or a tunnel: tunnel ids are random and never reused, so no two accounts share one) and the
 * action's position; three names where a module's has two, so an action never shares a route module's circuit.
 */
export function policyCircuits(home: CircuitHome, ingress: string): CircuitBreakers {
  return {
    enter: ({ scope, action }, spec) => enterCircuit(home, { name: JSON.stringify([ingress, scope, action]), label: `${scope} ${action}`, spec }),
  };
}
