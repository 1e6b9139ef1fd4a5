/** Bindings and variables the Worker receives (see wrangler.toml). */

import type { RateLimiter } from "./limiter/limiter-object.ts";

export interface Env {
  /** Ingress instance that rate-limit counts are kept per; empty means the Cloudflare location. */
  INGRESS_ID?: string;
  /** Milliseconds a rate-limit count may take before the request proceeds uncounted (default 1000). */
  RATE_LIMIT_TIMEOUT_MS?: string;
  /** "1" exposes GET /__tollgate/stats (isolate counters) for the benchmark. */
  TOLLGATE_DEBUG_STATS?: string;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  [binding: string]: unknown;
}
