/**
 * The gateway Worker with one more path, `/__loop`, for `npm run bench:flood-cpu`: it runs `n` requests through
 * the gateway's own fetch handler (or builds a response only) inside the isolate, so their CPU cost can be read
 * without the HTTP stack and the load generator sharing the machine's cores.
 */

import gateway from "../../src/worker.ts";

export { AccountStore, CircuitBreaker, RateLimiter, TunnelHost, TunnelRegistry, TunnelSession } from "../../src/worker.ts";

/** A 429 the size and shape of the gateway's own (the JSON envelope, retry-after, an operation id), built whole. */
const ENVELOPE =
  '{"error_code":"ERR_SVC_226","status_code":429,"msg":"Rate limit exceeded: more than 10 requests in 60s. Retry after 53s.","details":{"rate_limit":"bench-flood","retry_after":53,"operation_id":"op_0ERcWhsdb1ERTM742AdZwYlyCxX"}}';

function respond(mode: string): Response | undefined {
  if (mode === "fixed") return new Response("Too Many Requests", { status: 429, headers: { "retry-after": "60" } });
  if (mode === "envelope") {
    return new Response(ENVELOPE, {
      status: 429,
      headers: { "content-type": "application/json", "retry-after": "53", "x-operation-id": "op_0ERcWhsdb1ERTM742AdZwYlyCxX" },
    });
  }
  return undefined;
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname !== "/__loop") return gateway.fetch(request, env, ctx);
    const n = Number(url.searchParams.get("n"));
    const mode = url.searchParams.get("mode") ?? "gateway";
    const target = url.searchParams.get("target") ?? "http://127.0.0.1/";
    let statuses = 0;
    for (let i = 0; i < n; i++) {
      // Every mode builds the request, as the HTTP stack would; only "gateway" hands it to the gateway.
      const looped = new Request(target, { headers: { "cf-connecting-ip": "192.0.2.1" } }) as Request<unknown, IncomingRequestCfProperties>;
      const response = respond(mode) ?? (await gateway.fetch(looped, env, ctx));
      statuses += response.status;
    }
    return new Response(String(statuses));
  },
} satisfies ExportedHandler<Cloudflare.Env>;
