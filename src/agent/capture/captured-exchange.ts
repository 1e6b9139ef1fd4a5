/**
 * One captured exchange while it runs and after: what the agent relayed (method, target, headers, the
 * first bytes of each body) and how it ended. Knows what it costs in memory, which the store adds up.
 */

import type { AnsweredBy, CarriedRateLimit } from "../../relay/edge-decision.ts";
import type { BodyBuffer } from "./body-buffer.ts";
import type { HeaderBlock } from "./header-block.ts";
import { ERROR_BYTES, EXCHANGE_BYTES, RESPONSE_BYTES, stringBytes } from "./retained-size.ts";

export type ExchangeState = "pending" | "complete" | "failed";

export interface CapturedRequest {
  readonly method: string;
  readonly proto: string;
  /** Path and query. */
  readonly target: string;
  readonly headers: HeaderBlock;
  readonly body: BodyBuffer;
}

export interface CapturedResponse {
  readonly statusCode: number;
  /** `200 OK`. */
  readonly status: string;
  readonly proto: string;
  readonly headers: HeaderBlock;
  readonly body: BodyBuffer;
}

/** What the edge's policy decided about the request: the rate limits it was counted against; who answered, if the edge did. */
export interface EdgeDecisions {
  readonly rateLimits: readonly CarriedRateLimit[];
  /** Set when the edge answered the request itself (there is no upstream response). */
  readonly atEdge?: { readonly answeredBy: AnsweredBy; readonly suppressed: number };
}

/** Bytes charged per carried rate-limit decision besides its strings (an object of nine fields). */
const DECISION_BYTES = 200;

export class CapturedExchange {
  response: CapturedResponse | undefined;
  state: ExchangeState = "pending";
  /** Set when it ended without a whole response (local service unreachable, reset, timeout). */
  error: { code: string; message: string } | undefined;
  /** Request head to the end of the exchange; undefined while it runs. */
  durationNs: bigint | undefined;
  /** Bytes charged to the store (`retainedBytes()` when it last looked). */
  bytes = 0;
  evicted = false;
  /** What the request head costs; it does not change. */
  private readonly headBytes: number;

  constructor(
    readonly id: string,
    readonly tunnelName: string,
    readonly remoteAddr: string,
    readonly start: Date,
    readonly startNs: bigint,
    readonly request: CapturedRequest,
    /** The capture this one replays, when the agent sent it as a replay. */
    readonly replayOf: string | undefined,
    readonly decisions: EdgeDecisions | undefined = undefined,
  ) {
    this.headBytes =
      EXCHANGE_BYTES +
      stringBytes(tunnelName) +
      stringBytes(remoteAddr) +
      stringBytes(request.method) +
      stringBytes(request.target) +
      request.headers.retainedBytes +
      (decisions
        ? DECISION_BYTES * (decisions.rateLimits.length + 1) +
          decisions.rateLimits.reduce((sum, each) => sum + stringBytes(each.name) + stringBytes(each.bucket_key), 0)
        : 0);
  }

  /** What the exchange holds in memory now. */
  retainedBytes(): number {
    let bytes = this.headBytes + this.request.body.retainedBytes;
    if (this.response) bytes += RESPONSE_BYTES + stringBytes(this.response.status) + this.response.headers.retainedBytes + this.response.body.retainedBytes;
    if (this.error) bytes += ERROR_BYTES + stringBytes(this.error.code) + stringBytes(this.error.message);
    return bytes;
  }
}
