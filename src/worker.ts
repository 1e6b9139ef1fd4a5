/** Worker entry: the fetch handler and the exported Durable Object classes. */

import { Hono } from "hono";
import type { Env } from "./env.ts";
import { loadedGateway } from "./gateway/loaded-config.ts";
import { handleGatewayRequest, type IsolateState } from "./gateway/pipeline.ts";
import { IsolateBuckets } from "./limiter/isolate-buckets.ts";
import { upstreamHandlers } from "./gateway/handlers.ts";
import { routeTunnelTraffic } from "./tunnels/index.ts";

export { RateLimiter } from "./limiter/limiter-object.ts";
export { CircuitBreaker } from "./gateway/modules/breaker-object.ts";
export { AccountStore } from "./management/account-store.ts";
export { TunnelHost, TunnelRegistry, TunnelSession } from "./tunnels/index.ts";

const app = new Hono<{ Bindings: Env }>();

/** This isolate's memories, shared by its requests (workerd runs one module instance per isolate). */
const isolate: IsolateState = { buckets: new IsolateBuckets() };

// Isolate counters for the benchmark (rate-limiter object calls vs. rejections answered from memory).
app.get("/__tollgate/stats", (c, next) => (c.env.TOLLGATE_DEBUG_STATS === "1" ? c.json(isolate.buckets.stats) : next()));

// Tunnel hosts (<label>.TUNNEL_DOMAIN) and the agent endpoint, before the gateway's routes.
app.use("*", async (c, next) => (await routeTunnelTraffic(c.req.raw, c.env, isolate)) ?? next());

app.all("*", (c) => {
  const loaded = loadedGateway();
  if (!loaded.ok) return loaded.error.toResponse();
  return handleGatewayRequest(c.req.raw, c.env, c.executionCtx as ExecutionContext, loaded.gateway.routes, upstreamHandlers, isolate);
});

export default app;
