/**
 * Applies a route's circuit breaker around its upstream. The circuit lives in a CircuitBreaker
 * Durable Object per (ingress instance, route); the isolate's BreakerMemory remembers "open until T" so
 * that, while tripped, requests are rejected without calling the object or the upstream.
 */

import type { Env } from "../../env.ts";
import { errorAnswer } from "../../error-answer.ts";
import { ErrorCode, ServiceError } from "../../errors.ts";
import type { BreakerMemory } from "./breaker-memory.ts";
import type { BreakerSpec, BreakerView } from "./circuit.ts";

const BREAKER_STATE_HEADER = "x-tollgate-circuit";

/** ERR_SVC_303: the route's upstream failed often enough that the gateway stopped calling it for a while. */
function circuitOpenAdvice(retryAfter: number) {
  return {
    title: "This service is pausing after errors",
    steps: [
      `The server behind this address failed too many requests, so the gateway is not sending it any for now. Try again in ${retryAfter} seconds.`,
      "If you run this gateway: the route's circuit_breaker module opened; check the upstream's errors. One trial request after tripped_duration closes the circuit again when it succeeds.",
    ],
  };
}

function rejection(routeLabel: string, view: BreakerView, now: number, request?: Request): Response {
  const retryAfter = Math.max(1, Math.ceil((view.openUntil - now) / 1000));
  const error = new ServiceError(
    503,
    ErrorCode.circuitOpen,
    `The circuit breaker of route ${routeLabel} is open after too many upstream errors; the upstream is not called. Retry after ${retryAfter}s.`,
    { circuit: view.status, retry_after: retryAfter },
    { "retry-after": String(retryAfter), [BREAKER_STATE_HEADER]: view.status },
    circuitOpenAdvice(retryAfter),
  );
  return request ? errorAnswer(error, request) : error.toResponse();
}

/** An upstream answer that counts as an error: status ≥ 500 (connection failures and timeouts arrive as 502/504). */
export function isUpstreamError(response: Response): boolean {
  return response.status >= 500;
}

/**
 * Calls the upstream through the route's circuit, or answers 503 ERR_SVC_303 while it is open: a page when
 * `request` (the client's) prefers HTML, the JSON envelope otherwise and when no request is given.
 */
export async function withCircuitBreaker(
  env: Env,
  ctx: ExecutionContext,
  memory: BreakerMemory,
  ingress: string,
  routeLabel: string,
  spec: BreakerSpec,
  call: () => Promise<Response>,
  request?: Request,
): Promise<Response> {
  const name = JSON.stringify([ingress, routeLabel]);
  const stub = env.CIRCUIT_BREAKER.get(env.CIRCUIT_BREAKER.idFromName(name));
  const known = memory.consult(name);
  if (known.kind === "reject") return rejection(routeLabel, known.view, memory.now(), request);
  let probe = false;
  if (known.kind === "ask") {
    const now = memory.now();
    let decided: Awaited<ReturnType<typeof stub.admit>>;
    try {
      decided = await stub.admit(spec, routeLabel, now);
    } catch (error) {
      // The breaker protects the upstream; it must not become the outage. Without its object, pass.
      console.error(`circuit breaker ${routeLabel}: unavailable, request passes: ${(error as Error).message}`);
      return call();
    }
    const { admission, view } = decided;
    memory.learn(name, view);
    if (!admission.allowed) return rejection(routeLabel, { ...view, openUntil: now + admission.retryAfterMs }, now, request);
    probe = admission.probe;
  }
  const response = await call();
  const outcome = { error: isUpstreamError(response), probe };
  const recorded = stub.record(spec, routeLabel, outcome, memory.now()).then((view) => memory.learn(name, view));
  // A probe's outcome must be known before the next request decides; other outcomes need not delay the answer.
  if (probe) await recorded;
  else ctx.waitUntil(recorded.catch((error) => console.error(`circuit breaker ${routeLabel}: recording failed: ${(error as Error).message}`)));
  return response;
}
