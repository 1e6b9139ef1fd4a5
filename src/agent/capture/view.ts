/**
 * Captured exchanges as the agent API shows them: ngrok's captured-request shape (`raw` is base64 of the
 * HTTP/1.1 message, `duration` integer nanoseconds, `start` RFC 3339 with the local UTC offset), plus
 * `truncated`/`body_length`, `state`, `error` and `replay_of`; and a small summary for the live list.
 */

import type { CapturedExchange } from "./captured-exchange.ts";
import { headerMap, requestHead, responseHead } from "./http-message.ts";

export interface CapturedRequestView {
  uri: string;
  id: string;
  tunnel_name: string;
  remote_addr: string;
  start: string;
  /** Nanoseconds from the request head to the end of the exchange (so far, while pending). */
  duration: number;
  request: {
    method: string;
    proto: string;
    headers: Record<string, string[]>;
    uri: string;
    raw: string;
    truncated: boolean;
    body_length: number;
  };
  response: {
    status: string;
    status_code: number;
    proto: string;
    headers: Record<string, string[]>;
    raw: string;
    truncated: boolean;
    body_length: number;
  } | null;
  state: CapturedExchange["state"];
  error: { code: string; message: string } | null;
  replay_of: string | null;
  /** The rate limits the edge counted the request against: their variables and RateLimit fields. */
  rate_limits: RateLimitView[];
  /** Set when the edge answered the request itself: it never reached the upstream. */
  edge_decision: EdgeDecisionView | null;
}

export interface RateLimitView {
  name: string;
  /** `actions.svc.rate_limit.*` */
  bucket_key: string;
  limited: boolean;
  outcome: string;
  retry_after: number;
  /** RateLimit fields: `RateLimit-Policy: "<name>";q=<capacity>;w=<window_s>`, `RateLimit: "<name>";r=<remaining>`. */
  remaining: number;
  capacity: number;
  window_s: number;
  error_code: string;
}

export interface EdgeDecisionView {
  answered_at_edge: true;
  phase: string;
  entry: number;
  entry_name: string | null;
  action: number;
  action_type: string;
  /** Requests like it the edge answered meanwhile that were counted, not sent (the agent hears at a bounded rate). */
  more_like_it: number;
}

export interface CapturedRequestSummary {
  id: string;
  tunnel_name: string;
  remote_addr: string;
  start: string;
  duration: number;
  method: string;
  uri: string;
  status_code: number | null;
  status: string | null;
  state: CapturedExchange["state"];
  error: string | null;
  replay_of: string | null;
  request_length: number;
  response_length: number | null;
  rate_limits: RateLimitView[];
  edge_decision: EdgeDecisionView | null;
}

function rateLimitsOf(exchange: CapturedExchange): RateLimitView[] {
  return (exchange.decisions?.rateLimits ?? []).map((each) => ({ ...each, error_code: each.error_code ?? "" }));
}

function edgeDecisionOf(exchange: CapturedExchange): EdgeDecisionView | null {
  const atEdge = exchange.decisions?.atEdge;
  if (!atEdge) return null;
  const { answeredBy } = atEdge;
  return {
    answered_at_edge: true,
    phase: answeredBy.phase,
    entry: answeredBy.entry,
    entry_name: answeredBy.entry_name ?? null,
    action: answeredBy.action,
    action_type: answeredBy.type,
    more_like_it: atEdge.suppressed,
  };
}

const pad = (value: number, width = 2) => String(value).padStart(width, "0");

/** RFC 3339 in the agent's local time with its numeric UTC offset, milliseconds kept. */
export function rfc3339(date: Date): string {
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}` +
    `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`
  );
}

export function captureUri(id: string): string {
  return `/api/requests/http/${id}`;
}

function durationOf(exchange: CapturedExchange): number {
  return Number(exchange.durationNs ?? process.hrtime.bigint() - exchange.startNs);
}

function base64(head: Uint8Array, body: Uint8Array): string {
  return Buffer.concat([head, body]).toString("base64");
}

export function captureView(exchange: CapturedExchange): CapturedRequestView {
  const { request, response } = exchange;
  const requestHeaders = request.headers.list();
  const responseHeaders = response?.headers.list() ?? [];
  return {
    uri: captureUri(exchange.id),
    id: exchange.id,
    tunnel_name: exchange.tunnelName,
    remote_addr: exchange.remoteAddr,
    start: rfc3339(exchange.start),
    duration: durationOf(exchange),
    request: {
      method: request.method,
      proto: request.proto,
      headers: headerMap(requestHeaders),
      uri: request.target,
      raw: base64(requestHead(request.method, request.target, request.proto, requestHeaders), request.body.bytes()),
      truncated: request.body.truncated,
      body_length: request.body.seen,
    },
    response: response
      ? {
          status: response.status,
          status_code: response.statusCode,
          proto: response.proto,
          headers: headerMap(responseHeaders),
          raw: base64(responseHead(response.proto, response.status, responseHeaders), response.body.bytes()),
          truncated: response.body.truncated,
          body_length: response.body.seen,
        }
      : null,
    state: exchange.state,
    error: exchange.error ?? null,
    replay_of: exchange.replayOf ?? null,
    rate_limits: rateLimitsOf(exchange),
    edge_decision: edgeDecisionOf(exchange),
  };
}

export function captureSummary(exchange: CapturedExchange): CapturedRequestSummary {
  return {
    id: exchange.id,
    tunnel_name: exchange.tunnelName,
    remote_addr: exchange.remoteAddr,
    start: rfc3339(exchange.start),
    duration: durationOf(exchange),
    method: exchange.request.method,
    uri: exchange.request.target,
    status_code: exchange.response?.statusCode ?? null,
    status: exchange.response?.status ?? null,
    state: exchange.state,
    error: exchange.error?.message ?? null,
    replay_of: exchange.replayOf ?? null,
    request_length: exchange.request.body.seen,
    response_length: exchange.response?.body.seen ?? null,
    rate_limits: rateLimitsOf(exchange),
    edge_decision: edgeDecisionOf(exchange),
  };
}
