import { describe, expect, it } from "vitest";
import { bucketId } from "../../../src/limiter/bucket-id.ts";
import { BucketIdCache, MAX_CACHED_NAME_CHARS } from "../../../src/limiter/bucket-id-cache.ts";

const name = (key: string) => ({ ingress: "local", scope: "route:e/r", action: "0", key });

describe("bucket id cache", () => {
  it("answers a short name's id at once the second time, the same id bucketId computes", async () => {
    const cache = new BucketIdCache();
    const first = cache.idOf(name("203.0.113.7"));
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBe(await bucketId(name("203.0.113.7")));
    expect(cache.idOf(name("203.0.113.7"))).toBe(await first);
  });

  it("never keeps a name longer than its bound: long client keys are hashed every time", async () => {
    const cache = new BucketIdCache();
    const long = name("k".repeat(MAX_CACHED_NAME_CHARS));
    expect(await cache.idOf(long)).toBe(await bucketId(long));
    expect(cache.size).toBe(0);
    expect(cache.idOf(long)).toBeInstanceOf(Promise);
  });

  it("is bounded by bytes: past maxBytes the oldest names are forgotten", async () => {
    const cache = new BucketIdCache({ maxBytes: 4096 });
    for (let i = 0; i < 200; i++) await cache.idOf(name(`client-${i}`));
    expect(cache.usedBytes).toBeLessThanOrEqual(4096);
    expect(cache.size).toBeGreaterThan(0);
    expect(cache.size).toBeLessThan(200);
    expect(cache.idOf(name("client-199"))).toBeTypeOf("string");
    expect(cache.idOf(name("client-0"))).toBeInstanceOf(Promise);
  });
});
