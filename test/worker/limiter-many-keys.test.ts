import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import { durableObjectCounter } from "../../src/gateway/limiter-client.ts";
import { SHARDS_PER_ACTION } from "../../src/limiter/bucket-shards.ts";
import { IsolateBuckets } from "../../src/limiter/isolate-buckets.ts";
import type { CountResult, RateLimitCounter } from "../../src/policy/exchange.ts";

const KEYS = 10_000;
// One admission a key: the second request of every key must be refused, the least work that shows it.
const CAPACITY = 1;
// An hour: however slow a busy machine makes the run, no admission leaves the window before the last round.
const spec = { capacity: CAPACITY, windowMs: 3_600_000 };
// A minute per call: 1,000 calls in flight on a machine at load 19 once took longer than the suite's 10 s, and a
// call that times out passes uncounted, which this test counts as a failure of the store.
const patient = { ...env, RATE_LIMIT_TIMEOUT_MS: "60000" } as Env;

/** The rate-limiter namespace, recording the names of the objects asked for. */
function recordingNamespace(names: Set<string>): Env["RATE_LIMITER"] {
  return {
    idFromName: (name: string) => {
      names.add(name);
      return env.RATE_LIMITER.idFromName(name);
    },
    get: (id: DurableObjectId) => env.RATE_LIMITER.get(id),
  } as unknown as Env["RATE_LIMITER"];
}

/** One request for every `every`-th key, 1,000 in flight at a time. */
async function inSlices(counter: RateLimitCounter, seen: (key: string, result: CountResult) => void, every = 1): Promise<void> {
  for (let start = 0; start < KEYS; start += 1_000 * every) {
    const keys = Array.from({ length: 1_000 }, (_, i) => `client-${start + i * every}`).filter((_, i) => start + i * every < KEYS);
    const results = await Promise.all(keys.map((key) => counter.count({ scope: "route:flood", action: "per-key", key }, spec)));
    for (const [i, result] of results.entries()) seen(keys[i]!, result);
  }
}

describe("a flood spread over 10,000 keys", () => {
  it("limits every key at its capacity, counts every request, and uses a bounded number of objects", async () => {
    const names = new Set<string>();
    const ingress = `many-keys-${Math.random()}`;
    const buckets = new IsolateBuckets();
    const counter = durableObjectCounter({ ...patient, RATE_LIMITER: recordingNamespace(names) } as Env, ingress, buckets);
    const admitted = new Map<string, number>();
    let failures = 0;
    // CAPACITY + 1 rounds over every key, 1,000 requests in flight at a time: as a flood's concurrent requests would.
    for (let round = 0; round <= CAPACITY; round++) {
      await inSlices(counter, (key, result) => {
        if (!result.ok) failures++;
        else if (result.decision.allowed) admitted.set(key, (admitted.get(key) ?? 0) + 1);
      });
    }
    expect(failures).toBe(0);
    expect(admitted.size).toBe(KEYS);
    expect([...admitted.values()].every((count) => count === CAPACITY)).toBe(true);
    expect(names.size).toBeLessThanOrEqual(SHARDS_PER_ACTION);
    // Every admission was decided by the store (in its own call or carried by another's): the isolate alone never
    // admits a request of a quiet key. Takes of different keys on one object ride one call, so calls are far fewer.
    const { objectCalls, takesCarried } = buckets.stats;
    expect(objectCalls + takesCarried).toBeGreaterThanOrEqual(KEYS * CAPACITY);
    expect(objectCalls).toBeLessThan(KEYS);

    // The counts live in the store, not in this isolate's memory: a fresh isolate is limited too (every 10th key,
    // 1,000 keys over every shard: the other 9,000 calls would show the same thing and cost a third of the file).
    const other = durableObjectCounter(patient, ingress, new IsolateBuckets());
    let admittedAgain = 0;
    let askedAgain = 0;
    await inSlices(
      other,
      (_key, result) => {
        askedAgain++;
        if (!result.ok) failures++;
        else if (result.decision.allowed) admittedAgain++;
      },
      10,
    );
    expect(askedAgain).toBe(KEYS / 10);
    expect(failures).toBe(0);
    expect(admittedAgain).toBe(0);
  }, 240_000);
});
