/**
 * Where the gateway reports rate-limit decisions and `log` action records: structured JSON log lines
 * (limited decisions bounded by the isolate's DecisionLog) and, when the optional RATE_LIMIT_ANALYTICS
 * binding is configured, one Workers Analytics Engine data point per decision (schema in docs/rate-limits.md).
 */

import type { Env } from "../env.ts";
import type { DecisionLog } from "../limiter/decision-log.ts";
import type { DecisionSink, RateLimitEvent } from "../policy/exchange.ts";

/** Analytics Engine accepts at most 25 data points per Worker invocation. */
export const MAX_DATA_POINTS_PER_REQUEST = 25;
/** Characters of each text field of a log line or data point (6 blobs × 256 × 3 bytes < AE's 5,120 bytes). */
export const MAX_FIELD_CHARS = 256;
/** Analytics Engine's limit on the one index. */
const MAX_INDEX_BYTES = 96;

/** The part of an Analytics Engine dataset binding the gateway uses (tests pass a capturing one). */
export interface DataPointWriter {
  writeDataPoint(point: { blobs: string[]; doubles: number[]; indexes: string[] }): void;
}

export interface DecisionSinkOptions {
  readonly ingress: string;
  readonly log: DecisionLog;
  readonly dataset?: DataPointWriter;
  readonly write?: (line: string) => void;
}

const clip = (text: string, max = MAX_FIELD_CHARS) => (text.length > max ? text.slice(0, max) : text);

/** The Analytics Engine data point of one decision (see docs/rate-limits.md for the schema). */
export function rateLimitDataPoint(event: RateLimitEvent, ingress: string): { blobs: string[]; doubles: number[]; indexes: string[] } {
  return {
    // Bucket ids are 43 ASCII characters; the fallback may be any text, 3 UTF-8 bytes a character at most.
    indexes: [event.bucketId ?? clip(`${event.scope} ${event.action}`, MAX_INDEX_BYTES / 3)],
    blobs: [event.scope, event.action, event.outcome, event.bucketKey, ingress, event.errorCode].map((text) => clip(text)),
    doubles: [event.capacity, event.windowMs / 1000, event.remaining, event.retryAfter, event.enforce ? 1 : 0],
  };
}

/** The RATE_LIMIT_ANALYTICS binding when one is configured. */
export function analyticsDataset(env: Env): DataPointWriter | undefined {
  const binding = env.RATE_LIMIT_ANALYTICS as Partial<DataPointWriter> | undefined;
  return typeof binding?.writeDataPoint === "function" ? (binding as DataPointWriter) : undefined;
}

/** A sink for one request (its data point count is per request). */
export function decisionSink({ ingress, log, dataset, write = (line) => console.log(line) }: DecisionSinkOptions): DecisionSink {
  let points = 0;
  return {
    rateLimit(event) {
      if (dataset && points < MAX_DATA_POINTS_PER_REQUEST) {
        points++;
        try {
          dataset.writeDataPoint(rateLimitDataPoint(event, ingress));
        } catch (error) {
          // Analytics must never fail a request.
          console.error(`rate-limit analytics: write failed: ${(error as Error).message}`);
        }
      }
      if (event.outcome !== "limited" && event.outcome !== "shadow_limited") return;
      const verdict = log.decide(event.bucketId ?? `${event.scope}\u0000${event.action}`);
      if (!verdict.write) return;
      const line = JSON.stringify({
        event: "rate_limit",
        outcome: event.outcome,
        route: clip(event.scope),
        action: clip(event.action),
        bucket_key: clip(event.bucketKey),
        enforce: event.enforce,
        retry_after: event.retryAfter,
        ingress: clip(ingress),
        suppressed: verdict.suppressed,
        ...(verdict.suppressedElsewhere > 0 ? { suppressed_other_buckets: verdict.suppressedElsewhere } : {}),
      });
      log.spend(line.length);
      write(line);
    },
    log(record) {
      const line = JSON.stringify({ event: "traffic_policy.log", ingress: clip(ingress), ...record });
      const verdict = log.admitRecord(line.length);
      if (!verdict.write) return;
      write(verdict.dropped > 0 ? `${line.slice(0, -1)},"dropped_by_rate":${verdict.dropped}}` : line);
    },
  };
}
