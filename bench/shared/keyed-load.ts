/**
 * An autocannon run whose every request names a client in a header, so a per-client limit sees many buckets.
 * Each connection takes the next key from `nextKey` for each request and sees the status of each answer, so a
 * caller can count admissions per key (the oracle of a flood over many keys).
 */

import autocannon from "autocannon";
import { answerCounts } from "./load.ts";

export interface KeyedLoadOptions {
  readonly connections: number;
  readonly durationSeconds: number;
  /** Header the key goes in. */
  readonly header: string;
  /** The key of the next request. */
  readonly nextKey: () => string;
  /** Called with each answer's key and status, and when its request was sent and answered (ms, `Date.now()`). */
  readonly onAnswer?: (key: string, status: number, sent: number, answered: number) => void;
}

export interface KeyedLoadResult {
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly p99: number;
  readonly limited: number;
  /** Answers other than 200 and 429, connection errors and timeouts. */
  readonly failures: number;
}

/** What autocannon's parser hands a `headers` listener (its typings say otherwise). */
interface ParsedHead {
  statusCode: number;
}

interface KeyedClient {
  on(event: "headers", listener: (head: ParsedHead) => void): void;
  on(event: "response", listener: () => void): void;
  setHeaders(headers: Record<string, string>): void;
}

export async function runKeyedLoad(url: string, options: KeyedLoadOptions): Promise<KeyedLoadResult> {
  const result = await autocannon({
    url,
    connections: options.connections,
    duration: options.durationSeconds,
    setupClient(raw) {
      const client = raw as unknown as KeyedClient;
      let key = options.nextKey();
      let sent = Date.now();
      client.setHeaders({ [options.header]: key });
      client.on("headers", (head) => options.onAnswer?.(key, head.statusCode, sent, Date.now()));
      // Emitted before the connection's next request is built, so that request carries the new key.
      client.on("response", () => {
        key = options.nextKey();
        sent = Date.now();
        client.setHeaders({ [options.header]: key });
      });
    },
  });
  return answerCounts(result);
}
