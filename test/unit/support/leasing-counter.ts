/**
 * A RateLimitCounter on the gateway's real path without workerd: the isolate's bucket memory (leases,
 * cached rejections) in front of an in-memory "object" running `take`, all on one injected clock. A renewal
 * asked for ahead is answered at once, as if it came back before the next request.
 */

import { bucketId } from "../../../src/limiter/bucket-id.ts";
import { LEASE_MS } from "../../../src/limiter/bucket-memory.ts";
import { IsolateBuckets } from "../../../src/limiter/isolate-buckets.ts";
import { emptyWindow, take, type WindowSpec, type WindowState } from "../../../src/limiter/sliding-window.ts";
import type { AfterResponse, BucketRef, CountResult, RateLimitCounter } from "../../../src/policy/exchange.ts";

export class LeasingCounter implements RateLimitCounter {
  readonly buckets: IsolateBuckets;
  private readonly windows = new Map<string, WindowState>();

  constructor(readonly clock: { now: number }) {
    this.buckets = new IsolateBuckets({ now: () => clock.now });
  }

  async count(bucket: BucketRef, spec: WindowSpec, afterResponse?: AfterResponse): Promise<CountResult> {
    const id = await bucketId({ ingress: "local", ...bucket });
    const consulted = this.buckets.consult(id, afterResponse !== undefined);
    if ("decision" in consulted) {
      const renewal = consulted.renewal;
      if (renewal) {
        const { decision, state } = take(this.windows.get(id) ?? emptyWindow, this.clock.now, spec, renewal.want, LEASE_MS, renewal.returned, false);
        this.windows.set(id, state);
        this.buckets.settleRenewal(id, { sent: renewal.sent }, decision);
      }
      return { ok: true, decision: consulted.decision, bucketId: id };
    }
    const { decision, state } = take(this.windows.get(id) ?? emptyWindow, this.clock.now, spec, consulted.want, LEASE_MS, consulted.returned);
    this.windows.set(id, state);
    return { ok: true, decision: this.buckets.settle(id, { sent: consulted.sent }, decision), bucketId: id };
  }
}
