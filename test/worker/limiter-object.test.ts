import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { limiterBehaviour } from "../shared/limiter-behaviour.ts";

let buckets = 0;
function freshStub() {
  return env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`limiter-object-test-${buckets++}-${Math.random()}`));
}

limiterBehaviour("RateLimiter Durable Object", () => {
  const stub = freshStub();
  return async (spec) => stub.take(spec, 1, 0);
});

describe("RateLimiter Durable Object", () => {
  it("keeps its window when the object is evicted and recreated", async () => {
    const stub = freshStub();
    const spec = { capacity: 3, windowMs: 60_000 };
    await stub.take(spec, 1, 0);
    await stub.take(spec, 1, 0);
    await abortAllDurableObjects();
    const restarted = env.RATE_LIMITER.get(stub.id);
    expect(await restarted.take(spec, 1, 0)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await restarted.take(spec, 1, 0)).allowed).toBe(false);
  });

  it("schedules a clean-up alarm at the end of the window, and an idle bucket deletes itself", async () => {
    const stub = freshStub();
    const before = Date.now();
    await stub.take({ capacity: 10, windowMs: 60_000 }, 1, 0);
    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeGreaterThanOrEqual(before + 60_000);
    expect(alarm!).toBeLessThanOrEqual(Date.now() + 61_000);

    // Make the stored window old, as if `rate` had passed, then let the alarm run.
    await runInDurableObject(stub, (_instance, state) => {
      const stored = state.storage.kv.get<{ state: { subWindows: Array<{ start: number; end: number; count: number }> }; windowMs: number }>("window")!;
      stored.state.subWindows = stored.state.subWindows.map((sub) => ({ ...sub, start: sub.start - 120_000, end: sub.end - 120_000 }));
      state.storage.kv.put("window", stored);
    });
    await abortAllDurableObjects(); // the next instance reads the aged window from storage
    const fresh = env.RATE_LIMITER.get(stub.id);
    expect(await runDurableObjectAlarm(fresh)).toBe(true);
    const keys = await runInDurableObject(fresh, (_instance, state) => [...state.storage.kv.list()].length);
    expect(keys).toBe(0);
  });

  it("an alarm before the window ends keeps the bucket and re-arms", async () => {
    const stub = freshStub();
    await stub.take({ capacity: 10, windowMs: 60_000 }, 1, 0);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const [keys, alarm] = await runInDurableObject(stub, async (_instance, state) => [[...state.storage.kv.list()].length, await state.storage.getAlarm()]);
    expect(keys).toBe(1);
    expect(alarm).not.toBeNull();
  });

  it("leases ahead without deciding a request, and keeps the lease counted across a restart", async () => {
    const stub = freshStub();
    const spec = { capacity: 1_000, windowMs: 60_000 };
    const ahead = await stub.take(spec, 40, 1_000, undefined, false);
    expect(ahead).toMatchObject({ allowed: true, granted: 40, remaining: 960 });
    await abortAllDurableObjects();
    expect(await env.RATE_LIMITER.get(stub.id).take(spec, 1, 0)).toMatchObject({ allowed: true, remaining: 959 });
  });

  it("takes back leased admissions handed back unused, and keeps that across a restart", async () => {
    const stub = freshStub();
    const spec = { capacity: 200, windowMs: 60_000 };
    const leased = await stub.take(spec, 20, 1_000);
    expect(leased).toMatchObject({ allowed: true, granted: 20, remaining: 180 });
    const back = await stub.take(spec, 1, 1_000, { start: leased.leaseStart, count: 19 });
    expect(back).toMatchObject({ allowed: true, remaining: 198 });
    await abortAllDurableObjects();
    expect(await env.RATE_LIMITER.get(stub.id).take(spec, 1, 0)).toMatchObject({ allowed: true, remaining: 197 });
  });
});
