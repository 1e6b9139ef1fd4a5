/**
 * What the agent sees of each relayed HTTP exchange, for metrics and request capture. A tap is asked once
 * per exchange and may return an observer that then hears about the body chunks and the outcome.
 */

import type { AnsweredBy, CarriedRateLimit } from "../../relay/edge-decision.ts";

export interface ExchangeInfo {
  /** Unique within the agent process (session + stream). */
  readonly key: string;
  readonly tunnelName: string;
  readonly tunnelId: string;
  /** The tunnel's `inspect` setting: capture only when true. */
  readonly inspect: boolean;
  readonly start: Date;
  /** process.hrtime.bigint() at the start, for durations in nanoseconds. */
  readonly startNs: bigint;
  readonly method: string;
  /** Path and query as the public client sent them. */
  readonly target: string;
  /** Request headers as relayed to the local service (including X-Forwarded-*), in order, repeated names kept. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** The public client's address. */
  readonly remoteAddr: string;
  readonly scheme: string;
  /** True for a replay the agent itself sent (no public client). */
  readonly replay?: boolean;
  /** The rate limits the edge's policy counted the request against (request_head.decisions, or an edge_decision's). */
  readonly rateLimits?: readonly CarriedRateLimit[];
  /** Set when the edge answered the request itself: which action did, and how many more like it were only counted. */
  readonly atEdge?: { readonly answeredBy: AnsweredBy; readonly suppressed: number };
}

export interface ResponseHeadInfo {
  readonly status: number;
  readonly statusText: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly httpVersion: string;
}

export interface ExchangeOutcome {
  /** Set when the exchange failed: why (a reset code) and how it reads. */
  readonly error?: { readonly code: string; readonly message: string };
  /** From the request head to the end of the exchange. */
  readonly durationNs: bigint;
}

export interface ExchangeObserver {
  onRequestBody?(chunk: Uint8Array): void;
  onRequestEnd?(): void;
  onResponseHead?(head: ResponseHeadInfo): void;
  onResponseBody?(chunk: Uint8Array): void;
  /** The whole response reached the edge; `elapsedNs` since the request head. */
  onResponseEnd?(elapsedNs: bigint): void;
  onClose?(outcome: ExchangeOutcome): void;
}

export interface ExchangeTap {
  open(info: ExchangeInfo): ExchangeObserver | undefined;
}

/** Fans one exchange out to several observers; an observer that throws is not allowed to break the relay. */
export function combineObservers(observers: ReadonlyArray<ExchangeObserver | undefined>): ExchangeObserver {
  const live = observers.filter((observer): observer is ExchangeObserver => observer !== undefined);
  const call = <K extends keyof ExchangeObserver>(name: K, ...args: Parameters<NonNullable<ExchangeObserver[K]>>) => {
    for (const observer of live) {
      try {
        (observer[name] as ((...a: unknown[]) => void) | undefined)?.(...args);
      } catch (error) {
        console.error(`tollgate agent: an exchange observer failed in ${name}:`, error);
      }
    }
  };
  return {
    onRequestBody: (chunk) => call("onRequestBody", chunk),
    onRequestEnd: () => call("onRequestEnd"),
    onResponseHead: (head) => call("onResponseHead", head),
    onResponseBody: (chunk) => call("onResponseBody", chunk),
    onResponseEnd: (elapsed) => call("onResponseEnd", elapsed),
    onClose: (outcome) => call("onClose", outcome),
  };
}
