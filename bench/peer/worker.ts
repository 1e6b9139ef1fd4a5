/**
 * The peer: the same pass-through proxy behind hono-rate-limiter with its Durable Object store
 * (@hono-rate-limiter/cloudflare), configured like Tollgate's bench routes. A separate Worker,
 * bundled and served by the bench exactly like the gateway.
 */

import { Hono, type Context, type MiddlewareHandler } from "hono";
import { rateLimiter } from "hono-rate-limiter";
import { DurableObjectRateLimiter, DurableObjectStore } from "@hono-rate-limiter/cloudflare";

export { DurableObjectRateLimiter };

type Namespace = DurableObjectStore["namespace"];

interface PeerEnv {
  HRL: Namespace;
  /** Origin URL every route proxies to. */
  ORIGIN: string;
  ALLOWED_LIMIT: string;
  FLOOD_LIMIT: string;
  WINDOW_MS: string;
}

type PeerBindings = { Bindings: PeerEnv };

/** Store calls of this isolate (each one is a Durable Object call), for "object calls per 429". */
const stats = { objectCalls: 0 };

/** The library's store, counting its increments; built once per isolate, when the binding is first seen. */
class CountingStore extends DurableObjectStore<PeerBindings> {
  override increment(key: string) {
    stats.objectCalls++;
    return super.increment(key);
  }
}

function limiterFor(limitVar: "ALLOWED_LIMIT" | "FLOOD_LIMIT"): MiddlewareHandler<PeerBindings> {
  let limiter: MiddlewareHandler<PeerBindings> | undefined;
  return (c, next) => {
    limiter ??= rateLimiter<PeerBindings>({
      windowMs: Number(c.env.WINDOW_MS),
      limit: Number(c.env[limitVar]),
      standardHeaders: "draft-6",
      keyGenerator: (ctx) => ctx.req.header("cf-connecting-ip") ?? "",
      store: new CountingStore({ namespace: c.env.HRL, prefix: `${limitVar}:` }),
    });
    return limiter(c, next);
  };
}

/**
 * Proxies to the origin. Through `c.newResponse`, so the headers the limiter set with `c.header()`
 * reach the client (they are lost when a handler returns the fetched Response itself; see BENCH.md).
 */
async function proxy(c: Context<PeerBindings>): Promise<Response> {
  const url = new URL(c.req.url);
  const upstream = await fetch(new Request(c.env.ORIGIN + url.pathname + url.search, c.req.raw));
  return c.newResponse(upstream.body, upstream);
}

const app = new Hono<PeerBindings>();

app.get("/__peer/stats", (c) => c.json(stats));
app.all("/allowed", limiterFor("ALLOWED_LIMIT"), proxy);
app.all("/flood", limiterFor("FLOOD_LIMIT"), proxy);

export default app;
