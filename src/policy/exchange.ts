/** The request/response pair a traffic policy acts on, as plain values the engine can read and change. */

import type { CircuitBreakers } from "../breaker/circuits.ts";
import type { WindowDecision, WindowSpec } from "../limiter/sliding-window.ts";
import type { LimitOverrides } from "../limiter/override-match.ts";
import type { LimitSpec } from "../limiter/window-rules.ts";
import type { ActionVars } from "./actions/results.ts";
import type { EvaluationBudget } from "./evaluation-budget.ts";
import type { RequestBody } from "./request-body.ts";

/** The two phases, by their canonical names (documents may call them on_http_request / on_http_response). */
export type Phase = "inbound" | "outbound";

export interface ExchangeRequest {
  readonly method: string;
  readonly url: URL;
  /** Host name as the client sent it (without port). */
  readonly host: string;
  /** Inbound actions may change these; they are the headers sent upstream. */
  readonly headers: Headers;
  /**
   * The body, for an inbound action that must read it (verify-webhook): read once, bounded, and what was read
   * is what the upstream receives. Absent where there is none to give (tools, tests): reads as empty.
   */
  readonly body?: RequestBody;
}

export interface ExchangeResponse {
  readonly status: number;
  /** Outbound actions may change these; they are the headers sent to the client. */
  readonly headers: Headers;
}

/** One member of the RateLimit-Policy and RateLimit header fields, from one rate-limit decision. */
export interface RateLimitField {
  /** The policy's name: the action's `name`, printable ASCII (validated at load). */
  readonly policy: string;
  /** `q`: capacity; `w`: window in seconds. */
  readonly quota: number;
  readonly windowSeconds: number;
  /** `r`: remaining quota; `t`: seconds until more is available. */
  readonly remaining: number;
  readonly resetSeconds: number;
  /** Listed in RateLimit-Policy only: another window of the same action is the one closest to its limit. */
  readonly policyOnly?: boolean;
}

/**
 * What the platform knows of the client connection: the fields of Workers' `request.cf` that variables read
 * (conn.geo.*, conn.client_ip.geo.*, conn.tls.*). Absent off Workers (Node tests, tools); any field may be
 * absent on Workers too (local development, addresses Cloudflare cannot place).
 */
export interface ConnectionFacts {
  readonly country?: string;
  readonly city?: string;
  readonly continent?: string;
  readonly region?: string;
  readonly regionCode?: string;
  readonly postalCode?: string;
  readonly metroCode?: string;
  readonly timezone?: string;
  readonly latitude?: string;
  readonly longitude?: string;
  /** "1" when the country is in the EU. */
  readonly isEUCountry?: string;
  readonly asn?: number;
  readonly asOrganization?: string;
  /** e.g. "TLSv1.3"; absent on plain HTTP. */
  readonly tlsVersion?: string;
  readonly tlsCipher?: string;
  /** e.g. "HTTP/2". */
  readonly httpProtocol?: string;
}

/** Work a request may leave running after its response (a Worker's ExecutionContext is one). */
export interface AfterResponse {
  waitUntil(task: Promise<unknown>): void;
}

export interface Exchange {
  /** Namespace of rate-limit buckets: the route or tunnel this traffic belongs to. */
  readonly scope: string;
  /** Where work that need not hold up the response goes; absent where the caller has nowhere to put it. */
  readonly afterResponse?: AfterResponse;
  readonly clientIp: string;
  readonly request: ExchangeRequest;
  response?: ExchangeResponse;
  /** Result variables of actions that ran, readable as `actions.svc.<action>.*` (last execution only); each action declares its own. */
  readonly vars: ActionVars;
  /** The work this request's policies may still do (CEL, regex, log output), shared by both phases. */
  readonly budget: EvaluationBudget;
  /** RateLimit header members collected by rate-limit actions with `ratelimit_headers: true`, in order. */
  rateLimitFields?: RateLimitField[];
  /** Costs the target's response settles (rate-limit's `settle_cost`), run once by src/gateway/response-settle.ts. */
  settles?: ResponseSettle[];
  /**
   * The connection as the platform describes it (`request.cf` on Workers), read only when a variable needs it:
   * reading `request.cf` costs (it is materialized on first access).
   */
  readonly connection?: () => ConnectionFacts | undefined;
  /**
   * `vars.*`: the variables `set-vars` actions wrote, by name, as CEL values (string, bigint for int, number
   * for double, boolean, list, map). Created by the first set-vars that runs; absent reads as an empty map.
   */
  policyVars?: Map<string, unknown>;
  /**
   * `forward-internal`: the request, with the inbound changes so far, through the route or tunnel of the same
   * owner that an internal URL names (its policy, then its upstream). Absent where nothing may be forwarded to.
   */
  readonly forwardInternal?: (url: URL) => Promise<InternalForwardResult>;
  /**
   * Told the status of the upstream's answer (or of a forward-internal's, which stands for it) once it arrives, by
   * the gateway; never told when the inbound phase answered itself. A circuit-breaker adds one to record the
   * outcome; a returned promise is awaited before the response goes out.
   */
  upstreamObservers?: Array<(status: number) => Promise<void> | undefined>;
}

/**
 * What a forward-internal got: the target's answer, or (`ok: false`) the error answer of a forward that did
 * not happen (no such target, a loop, too many hops), before anything of the request was consumed.
 */
export type InternalForwardResult = { readonly ok: true; readonly response: Response } | { readonly ok: false; readonly response: Response };

/** Names one bucket: its Durable Object is per (ingress instance, scope, action name, key). */
export interface BucketRef {
  readonly scope: string;
  readonly action: string;
  readonly key: string;
  /** True (`scope: global` in the action): one bucket for every ingress instance, named without the instance. */
  readonly global?: boolean;
}

/** A cost the response settles (a rate-limit's `settle_cost`) for one admitted request. */
export interface ResponseSettle {
  /** The expression, as failures are reported: `owner` (the compiled expression) and its text. */
  readonly owner: object;
  readonly source: string;
  /** It reads `res.body`: the JSON body is read first, bounded (src/gateway/response-settle.ts). */
  readonly readsBody: boolean;
  /**
   * Evaluates against the response as the target sent it (`body`: res.body, undefined for absent) and sends the
   * cost; resolves to why the estimate stays instead (undefined once sent). Never rejects.
   */
  settle(response: { readonly status: number; readonly headers: Headers }, body: unknown): Promise<string | undefined>;
}

/**
 * `bucketId`: the bucket's fixed-size id (a hash) when the counter names buckets by one. `settle`: the count
 * reserved its cost (a LimitSpec with `reserve`, admitted); sends the settled cost to the bucket, never rejects.
 */
export type CountResult =
  | { readonly ok: true; readonly decision: WindowDecision; readonly bucketId?: string; readonly settle?: (cost: number) => Promise<void> }
  | { readonly ok: false; readonly code: string; readonly message: string; readonly bucketId?: string };

/**
 * Counts requests in buckets; never throws: failures come back as `ok: false`. `spec`: one sliding window at
 * cost 1, or several windows and a cost (src/limiter/window-rules.ts). `afterResponse`: where the counter may
 * leave work that need not hold up this request (renewing a busy bucket's lease).
 */
export interface RateLimitCounter {
  count(bucket: BucketRef, spec: WindowSpec | LimitSpec, afterResponse?: AfterResponse): Promise<CountResult>;
}

export type RateLimitOutcome = "allowed" | "limited" | "shadow_limited" | "error";

/** One rate-limit decision, as the gateway logs it and writes it to analytics. */
export interface RateLimitEvent {
  /** Route or tunnel (the bucket scope), action name, and the bucket key as `actions.svc.rate_limit.bucket_key` shows it. */
  readonly scope: string;
  readonly action: string;
  readonly bucketKey: string;
  readonly bucketId?: string;
  readonly enforce: boolean;
  readonly outcome: RateLimitOutcome;
  readonly capacity: number;
  readonly windowMs: number;
  readonly remaining: number;
  /** Whole seconds, as in retry-after; 0 unless limited. */
  readonly retryAfter: number;
  /** Why counting failed; '' unless the outcome is error. */
  readonly errorCode: string;
}

/** Where decisions and `log` action records go; the gateway bounds both (see src/gateway/limiter-client.ts). */
export interface DecisionSink {
  rateLimit(event: RateLimitEvent): void;
  /** One structured record of a `log` action. */
  log(record: Readonly<Record<string, unknown>>): void;
}

/** What actions may use besides the exchange. */
export interface ActionServices {
  readonly counter: RateLimitCounter;
  /** Absent: decisions are not reported and `log` records go to console.log as JSON lines. */
  readonly decisions?: DecisionSink;
  /** Where a `${…}` that fails at request time is reported; absent: a log of the policy engine's own. */
  readonly interpolationErrors?: InterpolationLog;
  /** The circuits of circuit-breaker actions; absent (tools, tests): every circuit reads closed. */
  readonly breakers?: CircuitBreakers;
  /** Limits set through the management API instead of a rate-limit action's own; absent (tools, tests): none. */
  readonly overrides?: LimitOverrides;
  /**
   * The time the request is decided at, for what actions read of the calendar (a month window's length);
   * absent: the wall clock. A policy simulation passes its simulated clock.
   */
  readonly now?: () => number;
}

/** Where failed `${…}` interpolations are reported, at a bounded rate (ExpressionErrorLog is one). */
export interface InterpolationLog {
  /** `field`: the compiled action field, by identity; `where`: its path, e.g. `inbound[0].actions[1].config.headers.x-ip`. */
  interpolationError(field: object, where: string, source: string, message: string): void;
}
