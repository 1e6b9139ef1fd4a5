/** Behaviour every limiter must show, run against the pure sliding window and the RateLimiter Durable Object. */

import { describe, expect, it } from "vitest";
import type { WindowDecision, WindowSpec } from "../../src/limiter/sliding-window.ts";

/** Makes a fresh bucket and returns a function that counts one request in it. */
export type BucketFactory = () => (spec: WindowSpec) => Promise<WindowDecision>;

export function limiterBehaviour(name: string, freshBucket: BucketFactory): void {
  describe(`${name}: limiter behaviour`, () => {
    it("admits exactly `capacity` requests and then answers with a wait", async () => {
      const hit = freshBucket();
      const spec = { capacity: 5, windowMs: 60_000 };
      const decisions = [];
      for (let i = 0; i < 7; i++) decisions.push(await hit(spec));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false]);
      expect(decisions.slice(0, 5).map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0]);
      for (const rejected of decisions.slice(5)) {
        expect(rejected.retryAfterMs).toBeGreaterThan(0);
        expect(rejected.retryAfterMs).toBeLessThanOrEqual(61_000);
      }
    });

    it("a capacity of 1 admits one request per window", async () => {
      const hit = freshBucket();
      const spec = { capacity: 1, windowMs: 3_600_000 };
      expect((await hit(spec)).allowed).toBe(true);
      const second = await hit(spec);
      expect(second.allowed).toBe(false);
      expect(second.retryAfterMs).toBeGreaterThan(3_500_000);
    });

    it("a capacity of 2e9 counts without allocating per request", async () => {
      const hit = freshBucket();
      const spec = { capacity: 2_000_000_000, windowMs: 86_400_000 };
      let last: WindowDecision | undefined;
      for (let i = 0; i < 200; i++) last = await hit(spec);
      expect(last).toMatchObject({ allowed: true, remaining: 2_000_000_000 - 200 });
    });

    it("buckets do not share counts", async () => {
      const first = freshBucket();
      const second = freshBucket();
      const spec = { capacity: 1, windowMs: 60_000 };
      expect((await first(spec)).allowed).toBe(true);
      expect((await first(spec)).allowed).toBe(false);
      expect((await second(spec)).allowed).toBe(true);
    });
  });
}
