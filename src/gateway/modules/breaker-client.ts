/**
 * Applies a route's circuit breaker around its upstream. The circuit lives in a CircuitBreaker
 * Durable Object per (ingress instance, route); this isolate remembers "open until T" so that, while
 * tripped, requests are rejected without calling the object or the upstream.
 */

import type { Env } from "../../env.ts";
import { ErrorCode, ServiceError } from "../../errors.ts";
import type { BreakerSpec, BreakerView } from "./circuit.ts";

export const BREAKER_STATE_HEADER = "x-tollgate-circuit";

/** Breaker object name → what this isolate last learned. */
const known = new Map<string, BreakerView>();

export function clearBreakerCache(): void {
  known.clear();
}

function describeView(view: BreakerView): string {
  return `${view.status}; ${view.errors} errors in ${view.requests} requests in the window`;
}

function rejection(routeLabel: string, view: BreakerView, now: number): Response {
  const retryAfter = Math.max(1, Math.ceil((view.openUntil - now) / 1000));
  return new ServiceError(
    503,
    ErrorCode.circuitOpen,
    `The circuit breaker of route ${routeLabel} is open after too many upstream errors; the upstream is not called. Retry after ${retryAfter}s.`,
    { circuit: view.status, retry_after: retryAfter },
    { "retry-after": String(retryAfter), [BREAKER_STATE_HEADER]: view.status },
  ).toResponse();
}

/** An upstream answer that counts as an error: status ≥ 500 (connection failures and timeouts arrive as 502/504). */
export function isUpstreamError(response: Response): boolean {
  return response.status >= 500;
}

export async function withCircuitBreaker(
  env: Env,
  ctx: ExecutionContext,
  ingress: string,
  routeLabel: string,
  spec: BreakerSpec,
  call: () => Promise<Response>,
): Promise<Response> {
  const name = JSON.stringify([ingress, routeLabel]);
  const stub = env.CIRCUIT_BREAKER.get(env.CIRCUIT_BREAKER.idFromName(name));
  const now = Date.now();
  const last = known.get(name);
  let probe = false;
  if (last && last.status !== "closed" && now < last.openUntil) return rejection(routeLabel, last, now);
  if (!last || last.status !== "closed") {
    let decided: Awaited<ReturnType<typeof stub.admit>>;
    try {
      decided = await stub.admit(spec, routeLabel);
    } catch (error) {
      // The breaker protects the upstream; it must not become the outage. Without its object, pass.
      console.error(`circuit breaker ${routeLabel}: unavailable, request passes: ${(error as Error).message}`);
      return call();
    }
    const { admission, view } = decided;
    known.set(name, view);
    if (!admission.allowed) return rejection(routeLabel, { ...view, openUntil: now + admission.retryAfterMs }, now);
    probe = admission.probe;
  }
  const response = await call();
  const outcome = { error: isUpstreamError(response), probe };
  const recorded = stub.record(spec, routeLabel, outcome).then((view) => {
    known.set(name, view);
  });
  // A probe's outcome must be known before the next request decides; other outcomes need not delay the answer.
  if (probe) await recorded;
  else ctx.waitUntil(recorded.catch((error) => console.error(`circuit breaker ${routeLabel}: recording failed: ${(error as Error).message}`)));
  return response;
}
