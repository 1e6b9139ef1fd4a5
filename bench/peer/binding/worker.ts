/**
 * The binding peer: the same pass-through proxy behind the Workers rate-limit binding (`[[ratelimits]]`,
 * simulated locally by Miniflare as an in-memory fixed window), keyed by `cf-connecting-ip` like the others.
 * The binding says only yes or no, so its 429 carries no retry-after.
 */

import { Hono, type Context } from "hono";

interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

interface BindingPeerEnv {
  ALLOWED_LIMITER: RateLimitBinding;
  FLOOD_LIMITER: RateLimitBinding;
  /** Origin URL every route proxies to. */
  ORIGIN: string;
}

type PeerBindings = { Bindings: BindingPeerEnv };

async function proxy(c: Context<PeerBindings>): Promise<Response> {
  const url = new URL(c.req.url);
  return fetch(new Request(c.env.ORIGIN + url.pathname + url.search, c.req.raw));
}

function limited(binding: "ALLOWED_LIMITER" | "FLOOD_LIMITER") {
  return async (c: Context<PeerBindings>): Promise<Response> => {
    const { success } = await c.env[binding].limit({ key: c.req.header("cf-connecting-ip") ?? "" });
    return success ? proxy(c) : c.text("Too Many Requests", 429);
  };
}

const app = new Hono<PeerBindings>();
app.all("/allowed", limited("ALLOWED_LIMITER"));
app.all("/flood", limited("FLOOD_LIMITER"));

export default app;
