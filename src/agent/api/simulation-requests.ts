/**
 * Captured exchanges as the requests of a policy simulation (src/policy/simulate/): in the order they started,
 * with their time offsets, client address, headers and, when the local service answered, its status, headers and
 * (for a settle_cost that reads it) its JSON body. What really happened is kept beside each for the comparison.
 */

import type { CapturedExchange } from "../capture/captured-exchange.ts";
import { MAX_SIMULATED_BODY_CHARS } from "../../policy/simulate/index.ts";
import { MAX_SETTLE_BODY_BYTES } from "../../policy/variables/response-body.ts";

/** The simulation's input fields of one capture (the schema's input form: headers as a map of lists). */
export interface CaptureAsRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string[]>;
  readonly client_ip: string;
  readonly at_ms: number;
  readonly response?: { status: number; headers: Record<string, string[]>; body?: string };
}

function headerMap(list: ReadonlyArray<readonly [string, string]>): Record<string, string[]> {
  // A map without a prototype: a header named __proto__ is a header like any other.
  const map: Record<string, string[]> = Object.create(null);
  for (const [name, value] of list) (map[name.toLowerCase()] ??= []).push(value);
  return map;
}

/** The client address without a port (`203.0.113.7:50123`, `[2001:db8::1]:443`), as conn.client_ip reads it. */
function addressOf(remote: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(remote);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(remote);
  return v4 ? v4[1]! : remote;
}

/**
 * `exchanges` (any order) as simulation requests, oldest first, and the time of the first (`start`). Response
 * bodies are given while their total stays within the simulation's bound and each is JSON a settle could read.
 */
export function capturesAsRequests(exchanges: readonly CapturedExchange[]): { start: string; ordered: CapturedExchange[]; requests: CaptureAsRequest[] } {
  const ordered = [...exchanges].sort((a, b) => a.start.getTime() - b.start.getTime() || (a.id < b.id ? -1 : 1));
  const first = ordered[0]?.start.getTime() ?? 0;
  let bodyChars = 0;
  const requests = ordered.map((exchange): CaptureAsRequest => {
    const headers = headerMap(exchange.request.headers.list());
    const host = headers.host?.[0] ?? `${exchange.tunnelName}.tunnel.invalid`;
    const request = {
      method: exchange.request.method,
      url: `https://${host}${exchange.request.target.startsWith("/") ? exchange.request.target : `/${exchange.request.target}`}`,
      headers,
      client_ip: addressOf(exchange.remoteAddr),
      at_ms: exchange.start.getTime() - first,
    };
    const response = exchange.response;
    if (!response || response.statusCode < 200 || response.statusCode > 599) return request;
    const responseHeaders = headerMap(response.headers.list());
    const json = /^application\/(?:[\w.+-]+\+)?json/i.test(responseHeaders["content-type"]?.[0] ?? "");
    const bytes = response.body.bytes();
    let body: string | undefined;
    if (json && !response.body.truncated && bytes.byteLength <= MAX_SETTLE_BODY_BYTES && bodyChars + bytes.byteLength <= MAX_SIMULATED_BODY_CHARS) {
      body = Buffer.from(bytes).toString("utf8");
      bodyChars += body.length;
    }
    return { ...request, response: { status: response.statusCode, headers: responseHeaders, ...(body !== undefined ? { body } : {}) } };
  });
  return { start: new Date(first).toISOString(), ordered, requests };
}
