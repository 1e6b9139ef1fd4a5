/** The variables CEL expressions read (`req`, `conn`, `res`, `actions`), built from an exchange. */

import type { Exchange } from "./exchange.ts";

function headerMap(headers: Headers): Map<string, string[]> {
  const map = new Map<string, string[]>();
  // Iteration yields each set-cookie separately and every other name once (joined); keep them all.
  for (const [name, value] of headers) map.set(name, [...(map.get(name) ?? []), value]);
  return map;
}

export function activation(exchange: Exchange) {
  const { request, response, vars } = exchange;
  const rateLimit = vars.rate_limit;
  const bindings: Record<string, Map<string, unknown>> = {
    req: new Map<string, unknown>([
      ["method", request.method],
      ["host", request.host],
      [
        "url",
        new Map([
          ["path", request.url.pathname],
          ["query", request.url.search.replace(/^\?/, "")],
          ["raw", request.url.pathname + request.url.search],
        ]),
      ],
      ["headers", headerMap(request.headers)],
    ]),
    conn: new Map([["client_ip", exchange.clientIp]]),
    actions: new Map([
      [
        "svc",
        new Map([
          [
            "rate_limit",
            new Map<string, unknown>([
              ["bucket_key", rateLimit.bucket_key],
              ["limited", rateLimit.limited],
              [
                "error",
                new Map([
                  ["code", rateLimit.error.code],
                  ["message", rateLimit.error.message],
                ]),
              ],
            ]),
          ],
          ["restrict_ips", new Map([["denied", vars.restrict_ips.denied]])],
        ]),
      ],
    ]),
  };
  if (response) {
    bindings.res = new Map<string, unknown>([
      ["status_code", BigInt(response.status)],
      ["headers", headerMap(response.headers)],
    ]);
  }
  return bindings as never;
}
