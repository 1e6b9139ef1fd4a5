/** Builds the exchanges the policy engine evaluates, with defaults for everything a test does not care about. */

import { EvaluationBudget } from "../../../src/policy/evaluation-budget.ts";
import { initialVars } from "../../../src/policy/actions/index.ts";
import type { Exchange } from "../../../src/policy/exchange.ts";

export interface ExchangeOptions {
  readonly method?: string;
  readonly url?: string;
  readonly headers?: HeadersInit;
  readonly clientIp?: string;
  readonly scope?: string;
  readonly response?: { readonly status: number; readonly headers?: HeadersInit };
  readonly budget?: EvaluationBudget;
}

export function makeExchange(options: ExchangeOptions = {}): Exchange {
  const url = new URL(options.url ?? "https://api.example.test/");
  return {
    scope: options.scope ?? "edge/route",
    clientIp: options.clientIp ?? "203.0.113.7",
    request: { method: options.method ?? "GET", url, host: url.hostname, headers: new Headers(options.headers) },
    response: options.response && { status: options.response.status, headers: new Headers(options.response.headers) },
    vars: initialVars(),
    budget: options.budget ?? new EvaluationBudget(),
  };
}
