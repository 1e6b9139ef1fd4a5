/** One autocannon run against one URL, with the 429s (and whether they carry retry-after) counted per response. */

import type { IncomingHttpHeaders } from "node:http";
import autocannon from "autocannon";

export interface LoadOptions {
  readonly connections: number;
  readonly durationSeconds: number;
}

export interface LoadResult {
  readonly requests: number;
  readonly requestsPerSecond: number;
  /** Latency in milliseconds over every response, 429s included. */
  readonly p50: number;
  readonly p99: number;
  /** Responses with status 429. */
  readonly limited: number;
  /** Share of the 429 responses whose retry-after is a whole number of seconds ≥ 1 (0 when none came). */
  readonly retryAfterShare: number;
  /** Responses other than 200 and 429, plus connection errors and timeouts. */
  readonly failures: number;
}

/** What autocannon's HTTP parser hands to a client's `headers` listener (the typings say otherwise). */
interface ParsedHead {
  statusCode: number;
  headers: string[];
}

function retryAfterSeconds(rawHeaders: readonly string[]): number | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === "retry-after") {
      const value = rawHeaders[i + 1]!.trim();
      return /^\d+$/.test(value) ? Number(value) : undefined;
    }
  }
  return undefined;
}

/** What every load run reports from autocannon's result: answers, their rate, p99, 429s and failures. */
export function answerCounts(result: autocannon.Result): { requests: number; requestsPerSecond: number; p99: number; limited: number; failures: number } {
  const statuses = result.statusCodeStats ?? {};
  let answered = 0;
  let unexpected = 0;
  for (const [status, { count = 0 }] of Object.entries(statuses)) {
    answered += count;
    if (status !== "200" && status !== "429") unexpected += count;
  }
  return {
    requests: answered,
    requestsPerSecond: answered / result.duration,
    p99: result.latency.p99,
    limited: statuses["429"]?.count ?? 0,
    failures: unexpected + result.errors + result.timeouts,
  };
}

export async function runLoad(url: string, { connections, durationSeconds }: LoadOptions): Promise<LoadResult> {
  let limitedSeen = 0;
  let limitedWithRetryAfter = 0;
  const result = await autocannon({
    url,
    connections,
    duration: durationSeconds,
    setupClient(client) {
      client.on("headers", ((head: ParsedHead) => {
        if (head.statusCode !== 429) return;
        limitedSeen++;
        const seconds = retryAfterSeconds(head.headers);
        if (seconds !== undefined && seconds >= 1) limitedWithRetryAfter++;
      }) as unknown as (headers: IncomingHttpHeaders) => void);
    },
  });
  return {
    ...answerCounts(result),
    p50: result.latency.p50,
    retryAfterShare: limitedSeen === 0 ? 0 : limitedWithRetryAfter / limitedSeen,
  };
}
