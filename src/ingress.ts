/** The ingress instance a request arrived at: rate-limit counts, breakers and tunnel regions are kept per instance. */

import type { Env } from "./env.ts";

/** INGRESS_ID if set, else the Cloudflare location of the request, else "local". */
export function ingressId(env: Pick<Env, "INGRESS_ID">, request: Request): string {
  if (env.INGRESS_ID) return env.INGRESS_ID;
  const colo = (request as Request & { cf?: { colo?: unknown } }).cf?.colo;
  return typeof colo === "string" && colo !== "" ? colo : "local";
}
