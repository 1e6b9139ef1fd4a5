/**
 * A RateLimitCounter over buckets held in a Map, for a simulation: each take is decided by `decideRow` and each
 * settle by `settleRow` (src/limiter/bucket-row.ts), the same pure functions the bucket object runs on its rows,
 * at the simulation's clock. Without leases: a request is decided by the bucket itself, as the object decides any
 * request that reaches it, so a sequence is admitted exactly as the object admits it one request at a time.
 */

import { type BucketRow, decideRow, emptyRow, settleRow, takeProblem, type TakeRequest } from "../../limiter/bucket-row.ts";
import type { WindowSpec } from "../../limiter/sliding-window.ts";
import { type LimitSpec, limitOf } from "../../limiter/window-rules.ts";
import type { BucketRef, CountResult, RateLimitCounter } from "../exchange.ts";

export class MemoryCounter implements RateLimitCounter {
  /** By bucket: what one simulation's requests left in it. Bounded by the simulation's requests and actions. */
  private readonly rows = new Map<string, BucketRow>();

  /** `now`: the simulated time of the request being run. */
  constructor(private readonly now: () => number) {}

  async count(bucket: BucketRef, spec: WindowSpec | LimitSpec): Promise<CountResult> {
    const id = JSON.stringify([bucket.global === true, bucket.scope, bucket.action, bucket.key]);
    const limit = limitOf(spec);
    const take: TakeRequest = { id, windows: limit.windows, cost: limit.cost, want: 1, leaseMs: 0, forRequest: true, reserve: limit.reserve };
    // The object refuses a take it will not decide; so does its stand-in, in the same words.
    const problem = takeProblem(take);
    if (problem) return { ok: false, code: "ERR_RATE_LIMIT_UNAVAILABLE", message: `the rate limiter failed: the store refused the call: ${problem}` };
    const { decision, row } = decideRow(this.rows.get(id) ?? emptyRow, take, this.now());
    this.rows.set(id, row);
    const reservation = limit.reserve;
    if (reservation === undefined || !decision.allowed) return { ok: true, decision };
    const settle = async (cost: number) => {
      const settled = settleRow(this.rows.get(id) ?? emptyRow, { id, reservation, cost }, this.now());
      this.rows.set(id, settled.row);
    };
    return { ok: true, decision, settle };
  }

  /** Buckets the simulation counted in. */
  get buckets(): number {
    return this.rows.size;
  }
}
