/**
 * One captured exchange while it runs and after: what the agent relayed (method, target, headers, the
 * first bytes of each body) and how it ended. Knows its own size, which the store adds up.
 */

import { BodyBuffer } from "./body-buffer.ts";
import type { HeaderList } from "./http-message.ts";

/** What an entry costs besides its strings and bodies (objects, maps, the id), roughly. */
export const ENTRY_OVERHEAD_BYTES = 512;
/** What one header costs besides its characters (array, two strings), roughly. */
const HEADER_OVERHEAD_BYTES = 48;

export type ExchangeState = "pending" | "complete" | "failed";

export interface CapturedRequest {
  readonly method: string;
  readonly proto: string;
  /** Path and query. */
  readonly target: string;
  readonly headers: HeaderList;
  readonly body: BodyBuffer;
}

export interface CapturedResponse {
  readonly statusCode: number;
  /** `200 OK`. */
  readonly status: string;
  readonly proto: string;
  readonly headers: HeaderList;
  readonly body: BodyBuffer;
}

export function headersCost(headers: HeaderList): number {
  let bytes = 0;
  for (const [name, value] of headers) bytes += name.length + value.length + HEADER_OVERHEAD_BYTES;
  return bytes;
}

export class CapturedExchange {
  response: CapturedResponse | undefined;
  state: ExchangeState = "pending";
  /** Set when it ended without a whole response (local service unreachable, reset, timeout). */
  error: { code: string; message: string } | undefined;
  /** Request head to the end of the exchange; undefined while it runs. */
  durationNs: bigint | undefined;
  /** Bytes accounted to the store. */
  bytes: number;
  evicted = false;

  constructor(
    readonly id: string,
    readonly tunnelName: string,
    readonly remoteAddr: string,
    readonly start: Date,
    readonly startNs: bigint,
    readonly request: CapturedRequest,
    /** The capture this one replays, when the agent sent it as a replay. */
    readonly replayOf: string | undefined,
  ) {
    this.bytes = ENTRY_OVERHEAD_BYTES + request.method.length + request.target.length + tunnelName.length + remoteAddr.length + headersCost(request.headers);
  }
}
