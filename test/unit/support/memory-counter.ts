/** RateLimitCounters for policy tests: one in memory on the real sliding window, one that always fails. */

import { emptyWindow, hit, type WindowSpec, type WindowState } from "../../../src/limiter/sliding-window.ts";
import type { BucketRef, CountResult, RateLimitCounter } from "../../../src/policy/exchange.ts";

/** Counts in the real sliding-window module at a clock the test sets; remembers every bucket it was asked about. */
export class MemoryCounter implements RateLimitCounter {
  readonly buckets = new Map<string, WindowState>();
  readonly calls: BucketRef[] = [];

  constructor(public now: number) {}

  async count(bucket: BucketRef, spec: WindowSpec): Promise<CountResult> {
    this.calls.push(bucket);
    const id = JSON.stringify([bucket.scope, bucket.action, bucket.key]);
    const { decision, state } = hit(this.buckets.get(id) ?? emptyWindow, this.now, spec);
    this.buckets.set(id, state);
    return { ok: true, decision };
  }
}

/** A counter whose storage is unreachable: every count fails with the given code and message. */
export function failingCounter(code: string, message: string): RateLimitCounter {
  return { count: async () => ({ ok: false, code, message }) };
}
