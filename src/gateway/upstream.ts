/** Sends a request that passed the inbound policy to its upstream and returns the upstream's answer. */

import type { Env } from "../env.ts";
import { errorAnswer } from "../error-answer.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import type { Exchange } from "../policy/exchange.ts";
import { busyResponse, RequestBody } from "../policy/request-body.ts";
import { settingsOf } from "../settings.ts";
import type { Route } from "./gateway-config.ts";
import type { RouteModules } from "./modules/route-modules.ts";
import type { Upstream } from "./upstream-spec.ts";

/** What the gateway calls outside itself; worker.ts builds them from the management layer and passes them in. */
export interface UpstreamHandlers {
  /** The built-in management API. */
  management(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> | Response;
  /** Reads the modules stored for a route (none when absent); the pipeline remembers them per isolate. */
  routeModules?(env: Env, route: Route): Promise<RouteModules>;
}

/** The request as the upstream should see it: the original body with the policy's header changes. */
export function upstreamRequest(original: Request, exchange: Exchange, url: string = original.url): Request {
  return new Request(url, {
    method: original.method,
    headers: exchange.request.headers,
    body: original.body,
    redirect: "manual",
  });
}

export async function dispatch(
  upstream: Upstream,
  original: Request,
  exchange: Exchange,
  env: Env,
  ctx: ExecutionContext,
  handlers: UpstreamHandlers,
): Promise<Response> {
  switch (upstream.kind) {
    case "management":
      return handlers.management(upstreamRequest(original, exchange), env, ctx);
    case "echo":
      return echo(original, exchange);
    case "origin":
      return proxyToOrigin(upstream.url, original, exchange, settingsOf(env).upstreamTimeoutMs);
    case "tcp":
      return errorAnswer(
        new ServiceError(
          502,
          ErrorCode.upstreamUnavailable,
          `This route's upstream is tcp://${upstream.hostname}:${upstream.port}; enable its websocket_tcp_converter module to bridge WebSockets to it.`,
          { advice: TCP_WITHOUT_CONVERTER_ADVICE },
        ),
        original,
      );
  }
}

/**
 * `echo`: answers with what the upstream would have received, for trying policies out. The body is read as an
 * action reads it (src/policy/request-body.ts): at most 1 MiB, within the isolate's body budget.
 */
async function echo(original: Request, exchange: Exchange): Promise<Response> {
  const read = await (exchange.request.body ?? new RequestBody(original.body, original.headers.get("content-length"))).read();
  if (!read.ok && read.busy) return busyResponse(read, ErrorCode.upstreamUnavailable, { upstream: "echo" });
  if (!read.ok) {
    const message = read.tooLarge ? `The echo upstream answers bodies of at most ${read.limit} bytes.` : `The echo upstream got no body: ${read.message}.`;
    return new ServiceError(read.tooLarge ? 413 : 400, ErrorCode.unparseableBody, message, { details: { upstream: "echo" } }).toResponse();
  }
  const body = new TextDecoder().decode(read.bytes);
  return Response.json({
    method: original.method,
    url: exchange.request.url.toString(),
    client_ip: exchange.clientIp,
    headers: Object.fromEntries(exchange.request.headers),
    body,
  });
}

function originUrl(origin: URL, requestUrl: URL): string {
  const target = new URL(origin.toString());
  const base = target.pathname.replace(/\/+$/, "");
  target.pathname = base + requestUrl.pathname;
  target.search = requestUrl.search;
  return target.toString();
}

/** ERR_SVC_302 on a tcp:// route: only WebSockets reach a TCP upstream, through a module the route lacks. */
const TCP_WITHOUT_CONVERTER_ADVICE = {
  title: "This address serves WebSocket clients only",
  steps: [
    "Its upstream speaks raw TCP, which a browser page cannot open; connect with a WebSocket client instead.",
    "If you run this gateway: enable the route's websocket_tcp_converter module to bridge WebSockets to the TCP upstream.",
  ],
};

/** ERR_SVC_302: the origin refused the connection, or it broke before an answer. */
const UPSTREAM_UNAVAILABLE_ADVICE = {
  title: "The server behind this address could not be reached",
  steps: [
    "The gateway is up, but the server it passes this address on to did not take the connection. Try again in a moment.",
    "If you run this gateway: check that the route's upstream in policies/gateway.yaml is running and reachable from the edge; the logs name the operation id below.",
  ],
};

/** ERR_SVC_304: the origin took the request and did not answer within UPSTREAM_TIMEOUT_MS. */
const UPSTREAM_TIMEOUT_ADVICE = {
  title: "The server behind this address took too long",
  steps: [
    "The server the gateway passes this address on to did not answer in time. Try again in a moment; a request that starts long work may have done it anyway.",
    "If you run this gateway: check the upstream's load and slow requests; UPSTREAM_TIMEOUT_MS sets how long the gateway waits.",
  ],
};

async function proxyToOrigin(origin: URL, original: Request, exchange: Exchange, timeoutMs: number): Promise<Response> {
  const requestUrl = exchange.request.url;
  const headers = exchange.request.headers;
  headers.set("x-forwarded-for", exchange.clientIp);
  headers.set("x-forwarded-host", requestUrl.host);
  headers.set("x-forwarded-proto", requestUrl.protocol.replace(":", ""));
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await fetch(upstreamRequest(original, exchange, originUrl(origin, requestUrl)), { signal: timeout });
  } catch (error) {
    const failure = timeout.aborted
      ? new ServiceError(504, ErrorCode.upstreamTimeout, `The upstream ${origin.origin} did not answer within ${timeoutMs}ms.`, {
          advice: UPSTREAM_TIMEOUT_ADVICE,
          cause: error,
        })
      : new ServiceError(502, ErrorCode.upstreamUnavailable, `The upstream ${origin.origin} could not be reached: ${(error as Error).message}`, {
          advice: UPSTREAM_UNAVAILABLE_ADVICE,
          cause: error,
        });
    return errorAnswer(failure, original);
  }
}
