/** The ingress instance a request arrived at: rate-limit counts, breakers and tunnel regions are kept per instance. */

import type { Env } from "./env.ts";
import { settingsOf } from "./settings.ts";

/** What an isolate remembers of its ingress (limiter/ingress-memo.ts): read from a request at most once a while. */
export interface IngressMemory {
  of(read: () => string): string;
}

/**
 * INGRESS_ID if set, else the Cloudflare location of the request, else "local": the one place the ingress is
 * decided. With `memory` (the isolate's), `request.cf`, the costliest step of a rejected request, is read only
 * when the memory is stale.
 */
export function ingressId(env: Env, request: Request, memory?: IngressMemory): string {
  const configured = settingsOf(env).ingressId;
  if (configured) return configured;
  return memory ? memory.of(() => locationOf(request)) : locationOf(request);
}

function locationOf(request: Request): string {
  const colo = (request as Request & { cf?: { colo?: unknown } }).cf?.colo;
  return typeof colo === "string" && colo !== "" ? colo : "local";
}
