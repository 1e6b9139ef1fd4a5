/** The variables CEL expressions read (`req`, `conn`, `res`, `actions`), built from an exchange. */

import { ELEMENT_UNITS } from "./cel-meter.ts";
import type { EvaluationBudget } from "./evaluation-budget.ts";
import type { Exchange } from "./exchange.ts";

/**
 * Header maps as expressions read them, built once per Headers object rather than once per expression (a
 * request with thousands of headers and a policy of a thousand expressions cost seconds). Keyed weakly, so a
 * request's map goes with it; the actions that change headers call `headersChanged`.
 */
const headerMaps = new WeakMap<Headers, Map<string, string[]>>();

/** Forgets the map of `headers` after an action changed them, so the next expression sees the change. */
export function headersChanged(headers: Headers): void {
  headerMaps.delete(headers);
}

function headerMap(headers: Headers, budget: EvaluationBudget): Map<string, string[]> {
  let map = headerMaps.get(headers);
  if (map) return map;
  map = new Map<string, string[]>();
  let units = 0;
  // Iteration yields each set-cookie separately and every other name once (joined); keep them all.
  for (const [name, value] of headers) {
    map.set(name, [...(map.get(name) ?? []), value]);
    units += ELEMENT_UNITS + name.length + value.length;
  }
  // Building it is work of the request like any other (once per request and Headers object).
  budget.chargeCel(units);
  headerMaps.set(headers, map);
  return map;
}

/** The variables of one exchange as CEL reads them (`req`, `conn`, `actions` and, outbound, `res`). */
export type Bindings = Readonly<Record<string, Map<string, unknown>>>;

/**
 * Builds the variables from the exchange as it is now. A snapshot: the caller builds it again after anything
 * changed the exchange (an action ran, the response arrived), and reuses it until then.
 */
export function activation(exchange: Exchange): Bindings {
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
      ["headers", headerMap(request.headers, exchange.budget)],
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
      ["headers", headerMap(response.headers, exchange.budget)],
    ]);
  }
  return bindings;
}
