/** Bindings and variables the Worker receives (see wrangler.toml). */

import type { CircuitBreaker } from "./gateway/modules/breaker-object.ts";
import type { RateLimiter } from "./limiter/limiter-object.ts";
import type { AccountStore } from "./management/account-store.ts";
import type { TunnelHost, TunnelRegistry, TunnelSession } from "./tunnels/index.ts";

export interface Env {
  /** Ingress instance that rate-limit counts are kept per; empty means the Cloudflare location. */
  INGRESS_ID?: string;
  /** Milliseconds a rate-limit count may take before the request proceeds uncounted (default 1000). */
  RATE_LIMIT_TIMEOUT_MS?: string;
  /** Milliseconds an origin may take to start answering before the gateway answers 504 (default 30000). */
  UPSTREAM_TIMEOUT_MS?: string;
  /** "1" exposes GET /__tollgate/stats (isolate counters) for the benchmark. */
  TOLLGATE_DEBUG_STATS?: string;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  /** One circuit per (ingress instance, route) with an enabled circuit breaker module. */
  CIRCUIT_BREAKER: DurableObjectNamespace<CircuitBreaker>;
  /** Management API keys: `<account_id>:<sha256 hex of the key>` entries separated by commas (docs/management-api.md). */
  TOLLGATE_API_KEYS?: string;
  /** The account that owns the edges of policies/gateway.yaml and so their route modules (default `acct_dev`). */
  TOLLGATE_EDGE_ACCOUNT?: string;
  /** One SQLite-backed store per account: bot users, route modules. */
  ACCOUNT_STORE: DurableObjectNamespace<AccountStore>;
  /** Tunnel hosts are `<label>.<TUNNEL_DOMAIN>` (locally `localhost`); empty turns tunnels off. */
  TUNNEL_DOMAIN?: string;
  /** Milliseconds between agent heartbeats (default 5000); a session missing 3 is taken offline. */
  TUNNEL_HEARTBEAT_MS?: string;
  /** One per agent session (`ts_…`): holds the agent's WebSocket, relays public requests. */
  TUNNEL_SESSION: DurableObjectNamespace<TunnelSession>;
  /** One per account: its online tunnels (the management API's GET /tunnels). */
  TUNNEL_REGISTRY: DurableObjectNamespace<TunnelRegistry>;
  /** One per public tunnel host label: which tunnel serves it. */
  TUNNEL_HOST: DurableObjectNamespace<TunnelHost>;
  [binding: string]: unknown;
}
