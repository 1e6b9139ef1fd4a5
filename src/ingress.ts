/** The ingress instance a request arrived at: rate-limit counts, breakers and tunnel regions are kept per instance. */

import type { Env } from "./env.ts";
import { settingsOf } from "./settings.ts";

/** INGRESS_ID if set, else the Cloudflare location of the request, else "local". */
export function ingressId(env: Env, request: Request): string {
  const configured = settingsOf(env).ingressId;
  if (configured) return configured;
  const colo = (request as Request & { cf?: { colo?: unknown } }).cf?.colo;
  return typeof colo === "string" && colo !== "" ? colo : "local";
}
