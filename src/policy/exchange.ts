/** The request/response pair a traffic policy acts on, as plain values the engine can read and change. */

import type { WindowDecision, WindowSpec } from "../limiter/sliding-window.ts";

export type Phase = "inbound" | "outbound";

export interface ExchangeRequest {
  readonly method: string;
  readonly url: URL;
  /** Host name as the client sent it (without port). */
  readonly host: string;
  /** Inbound actions may change these; they are the headers sent upstream. */
  readonly headers: Headers;
}

export interface ExchangeResponse {
  readonly status: number;
  /** Outbound actions may change these; they are the headers sent to the client. */
  readonly headers: Headers;
}

export interface RateLimitVars {
  bucket_key: string;
  limited: boolean;
  error: { code: string; message: string };
}

/** Result variables of actions that ran, readable as `actions.svc.<action>.*` (last execution only). */
export interface ActionVars {
  rate_limit: RateLimitVars;
}

export interface Exchange {
  /** Namespace of rate-limit buckets: the route or tunnel this traffic belongs to. */
  readonly scope: string;
  readonly clientIp: string;
  readonly request: ExchangeRequest;
  response?: ExchangeResponse;
  readonly vars: ActionVars;
}

export function initialVars(): ActionVars {
  return { rate_limit: { bucket_key: "", limited: false, error: { code: "", message: "" } } };
}

/** Names one bucket: its Durable Object is per (ingress instance, scope, action name, key). */
export interface BucketRef {
  readonly scope: string;
  readonly action: string;
  readonly key: string;
}

export type CountResult =
  | { readonly ok: true; readonly decision: WindowDecision }
  | { readonly ok: false; readonly code: string; readonly message: string };

/** Counts requests in buckets; never throws: failures come back as `ok: false`. */
export interface RateLimitCounter {
  count(bucket: BucketRef, spec: WindowSpec): Promise<CountResult>;
}

/** What actions may use besides the exchange. */
export interface ActionServices {
  readonly counter: RateLimitCounter;
}
