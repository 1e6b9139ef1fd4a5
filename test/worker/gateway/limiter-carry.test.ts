/**
 * `decideTake` (src/gateway/limiter-client.ts) with many clients on one store object, against a store that decides
 * with the object's own row code: takes of different clients ride one call, the request sending a call that carries
 * others' takes registers it with waitUntil, and a carrying call that fails ends in the counting error only for the
 * request whose own call it was (its riders send their takes again). Written by a review of the batching (helper).
 */

import { describe, expect, it } from "vitest";
import { durableObjectCounter } from "../../../src/gateway/limiter-client.ts";
import { type BucketRow, decideRow, emptyRow, type TakeRequest } from "../../../src/limiter/bucket-row.ts";
import { IsolateBuckets } from "../../../src/limiter/isolate-buckets.ts";
import type { LimitSpec } from "../../../src/limiter/window-rules.ts";

function storeOf(fails: (takes: readonly TakeRequest[]) => boolean) {
  const rows = new Map<string, BucketRow>();
  const calls: number[] = [];
  const env = {
    // Long enough that a busy machine never turns a 5 ms call into a timeout.
    RATE_LIMIT_TIMEOUT_MS: "10000",
    RATE_LIMITER: {
      idFromName: (name: string) => name,
      get: () => ({
        async takeAll(takes: readonly TakeRequest[], now: number) {
          calls.push(takes.length);
          await new Promise((resolve) => setTimeout(resolve, 5));
          if (fails(takes)) throw new Error("the object failed");
          return takes.map((take) => {
            const { decision, row } = decideRow(rows.get(take.id) ?? emptyRow, take, now);
            rows.set(take.id, row);
            return decision;
          });
        },
      }),
    },
  };
  return { env, calls };
}

// Two windows: decided by the object one take at a time, without leases.
const limit: LimitSpec = {
  windows: [
    { capacity: 100, windowMs: 60_000 },
    { capacity: 100, windowMs: 1_000 },
  ],
  cost: 1,
  key: "two",
};

async function fortyClients(fails: (takes: readonly TakeRequest[]) => boolean) {
  const { env, calls } = storeOf(fails);
  const counter = durableObjectCounter(env as never, "ingress", new IsolateBuckets());
  const registered: number[] = [];
  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) => {
      registered[i] = 0;
      return counter.count({ scope: "route:r", action: "a", key: `client-${i}` }, limit, { waitUntil: () => void registered[i]!++ });
    }),
  );
  return { results, calls, registered };
}

describe("decideTake: many clients on one store object", () => {
  it("takes of different clients ride one call, and each call is registered with its sender's waitUntil", async () => {
    const { results, calls, registered } = await fortyClients(() => false);
    expect(results.every((result) => result.ok && result.decision.allowed)).toBe(true);
    expect(calls.reduce((sum, takes) => sum + takes, 0)).toBe(40);
    expect(calls.length).toBeLessThan(40);
    expect(registered.reduce((sum, n) => sum + n, 0)).toBe(calls.length);
  });

  it("a carrying call that fails fails only its sender: the takes it carried are sent again", async () => {
    let failed = false;
    const { results, calls } = await fortyClients((takes) => {
      if (failed || takes.length < 2) return false;
      failed = true;
      return true;
    });
    expect(failed).toBe(true);
    expect(results.filter((result) => !result.ok)).toHaveLength(1);
    expect(results.filter((result) => result.ok && result.decision.allowed)).toHaveLength(39);
    expect(calls.length).toBeGreaterThan(1);
  });
});
