import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TakeRequest } from "../../src/limiter/bucket-table.ts";
import { MAX_TAKES_PER_CALL, type RateLimiter } from "../../src/limiter/limiter-object.ts";
import type { LeaseDecision, LeaseReturn, WindowSpec } from "../../src/limiter/sliding-window.ts";
import { limiterBehaviour } from "../shared/limiter-behaviour.ts";

/** The callers' clock (the object decides by the time it is given): the wall clock's, fixed for the file. */
const NOW = Date.now();

let objects = 0;
function freshStub() {
  return env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`limiter-object-test-${objects++}-${Math.random()}`));
}
type Stub = ReturnType<typeof freshStub>;

/** One take of bucket `id` in its own call. */
async function takeOne(stub: Stub, id: string, spec: WindowSpec, want = 1, leaseMs = 0, returned?: LeaseReturn, forRequest = true) {
  const answer = await stub.takeAll([{ id, spec, want, leaseMs, returned, forRequest }], NOW);
  if (!Array.isArray(answer)) throw new Error(answer.refused);
  return answer[0]!;
}

const bucketCount = (stub: Stub) =>
  runInDurableObject(stub, (_instance, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM buckets").one().n as number);

limiterBehaviour("RateLimiter Durable Object", () => {
  const stub = freshStub();
  return async (spec) => takeOne(stub, "bucket", spec);
});

describe("RateLimiter Durable Object: many buckets per object", () => {
  it("keeps each bucket's window apart, and a batch decides in order", async () => {
    const stub = freshStub();
    const spec = { capacity: 2, windowMs: 60_000 };
    const take = (id: string): TakeRequest => ({ id, spec, want: 1, leaseMs: 0, forRequest: true });
    const decisions = (await stub.takeAll([take("a"), take("b"), take("a"), take("a"), take("b")], NOW)) as LeaseDecision[];
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, true]);
    expect(decisions.map((d) => d.remaining)).toEqual([1, 1, 0, 0, 0]);
    expect(await bucketCount(stub)).toBe(2);
  });

  it("keeps its windows when the object is evicted and recreated", async () => {
    const stub = freshStub();
    const spec = { capacity: 3, windowMs: 60_000 };
    await takeOne(stub, "x", spec);
    await takeOne(stub, "x", spec);
    await takeOne(stub, "y", spec);
    await abortAllDurableObjects();
    const restarted = env.RATE_LIMITER.get(stub.id);
    expect(await takeOne(restarted, "x", spec)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await takeOne(restarted, "x", spec)).allowed).toBe(false);
    expect(await takeOne(restarted, "y", spec)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("refuses a call over its bounds: too many takes, an id that is not a hash", async () => {
    const stub = freshStub();
    const spec = { capacity: 3, windowMs: 60_000 };
    const many = Array.from({ length: MAX_TAKES_PER_CALL + 1 }, (_, i): TakeRequest => ({ id: `b${i}`, spec, want: 1, leaseMs: 0, forRequest: true }));
    expect(await stub.takeAll(many, NOW)).toEqual({ refused: `a call carries at most ${MAX_TAKES_PER_CALL} takes` });
    expect(await stub.takeAll([{ id: "k".repeat(65_536), spec, want: 1, leaseMs: 0, forRequest: true }], NOW)).toEqual({
      refused: "bucket ids are hashes of 1 to 64 characters",
    });
    expect(await bucketCount(stub)).toBe(0);
  });

  it("schedules eviction at the end of the window, deletes expired buckets only, and an empty object its storage", async () => {
    const stub = freshStub();
    const before = Date.now();
    await takeOne(stub, "old", { capacity: 10, windowMs: 60_000 });
    await takeOne(stub, "new", { capacity: 10, windowMs: 120_000 });
    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeGreaterThanOrEqual(before + 60_000);
    expect(alarm!).toBeLessThanOrEqual(Date.now() + 61_000);

    // Age "old" as if its window had passed, then let the alarm run on a fresh instance.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE buckets SET expires = expires - 120000, state = '[0,1,1]' WHERE id = 'old'");
    });
    await abortAllDurableObjects();
    const fresh = env.RATE_LIMITER.get(stub.id);
    expect(await runDurableObjectAlarm(fresh)).toBe(true);
    expect(await bucketCount(fresh)).toBe(1);
    expect(await runInDurableObject(fresh, (_instance, state) => state.storage.getAlarm())).not.toBeNull();

    await runInDurableObject(fresh, (_instance, state) => {
      state.storage.sql.exec("UPDATE buckets SET expires = 1, state = '[0,1,1]'");
    });
    expect(await runDurableObjectAlarm(fresh)).toBe(true);
    // deleteAll dropped the table; the object still answers at once, with a fresh window.
    expect(await takeOne(fresh, "new", { capacity: 10, windowMs: 120_000 })).toMatchObject({ allowed: true, remaining: 9 });
  });

  it("cleans up an object a version with one bucket per object left behind", async () => {
    const stub = freshStub();
    await runInDurableObject(stub, async (_instance, state) => {
      state.storage.kv.put("window", { state: { subWindows: [{ start: 0, end: 1, count: 1 }] }, windowMs: 60_000 });
      await state.storage.setAlarm(Date.now() + 60_000);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await runInDurableObject(stub, (_instance, state) => [...state.storage.kv.list()].length)).toBe(0);
  });

  it("leases ahead without deciding a request, and keeps the lease counted across a restart", async () => {
    const stub = freshStub();
    const spec = { capacity: 1_000, windowMs: 60_000 };
    const ahead = await takeOne(stub, "b", spec, 40, 1_000, undefined, false);
    expect(ahead).toMatchObject({ allowed: true, granted: 40, remaining: 960 });
    await abortAllDurableObjects();
    expect(await takeOne(env.RATE_LIMITER.get(stub.id), "b", spec)).toMatchObject({ allowed: true, remaining: 959 });
  });

  it("takes back leased admissions handed back unused, and keeps that across a restart", async () => {
    const stub = freshStub();
    const spec = { capacity: 200, windowMs: 60_000 };
    const leased = await takeOne(stub, "b", spec, 20, 1_000);
    expect(leased).toMatchObject({ allowed: true, granted: 20, remaining: 180 });
    const back = await takeOne(stub, "b", spec, 1, 1_000, { start: leased.leaseStart, count: 19 });
    expect(back).toMatchObject({ allowed: true, remaining: 198 });
    await abortAllDurableObjects();
    expect(await takeOne(env.RATE_LIMITER.get(stub.id), "b", spec)).toMatchObject({ allowed: true, remaining: 197 });
  });

  it("refuses a call whose clock is not whole epoch milliseconds, counting nothing", async () => {
    const stub = freshStub();
    const spec = { capacity: 1, windowMs: 60_000 };
    const take: TakeRequest = { id: "k", spec, want: 1, leaseMs: 0, forRequest: true };
    for (const now of [Number.NaN, -1, 1.5, 2 ** 53, "soon" as unknown as number]) {
      expect(await stub.takeAll([take], now)).toEqual({ refused: "now is a time in whole epoch milliseconds" });
      expect(await stub.settleAll([{ id: "k", reservation: "r", cost: 1 }], now)).toEqual({ refused: "now is a time in whole epoch milliseconds" });
    }
    expect(await takeOne(stub, "k", spec)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("decides by the clock its callers give, which never runs back for a bucket", async () => {
    const stub = freshStub();
    const spec = { capacity: 1, windowMs: 60_000 };
    const take: TakeRequest = { id: "k", spec, want: 1, leaseMs: 0, forRequest: true };
    const at = (now: number) => stub.takeAll([take], now) as Promise<LeaseDecision[]>;
    expect((await at(NOW))[0]).toMatchObject({ allowed: true });
    // A caller whose clock is a second behind is decided at the latest time given, not before it.
    expect((await at(NOW - 1_000))[0]).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
    // Two windows later by the callers' clock, whatever the wall clock says.
    expect((await at(NOW + 120_000))[0]).toMatchObject({ allowed: true });
  });

  it("writes the calls decided together in one commit, and answers each only once it is stored", async () => {
    const stub = freshStub();
    const spec = { capacity: 1, windowMs: 60_000 };
    const take = (id: string): TakeRequest => ({ id, spec, want: 1, leaseMs: 0, forRequest: true });
    const { answers, storedWhenAnswered, commits } = await runInDurableObject(stub, async (instance: RateLimiter, state) => {
      const stored = () => state.storage.sql.exec("SELECT COUNT(*) AS n FROM buckets").one().n as number;
      const storedWhenAnswered: number[] = [];
      const calls = ["a", "b", "c", "a"].map((id) =>
        instance.takeAll([take(id)], NOW).then((answer) => {
          storedWhenAnswered.push(stored());
          return answer;
        }),
      );
      const answers = await Promise.all(calls);
      return { answers, storedWhenAnswered, commits: instance.commits };
    });
    expect(answers.map((answer) => (answer as LeaseDecision[])[0]!.allowed)).toEqual([true, true, true, false]);
    expect(commits).toBe(1);
    // The refused call was answered first, at once; each of the others only with all three rows stored.
    expect(storedWhenAnswered).toEqual([0, 3, 3, 3]);
  });

  it("refuses every call of a commit whose write fails, and then decides from what storage holds", async () => {
    const stub = freshStub();
    const spec = { capacity: 2, windowMs: 60_000 };
    await takeOne(stub, "kept", spec);
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("CREATE TRIGGER full_disk BEFORE UPDATE ON buckets BEGIN SELECT RAISE(ABORT, 'disk full'); END");
    });
    expect(await stub.takeAll([{ id: "kept", spec, want: 1, leaseMs: 0, forRequest: true }], NOW)).toEqual({ refused: expect.stringContaining("disk full") });
    await runInDurableObject(stub, (_instance, state) => void state.storage.sql.exec("DROP TRIGGER full_disk"));
    // The refused take was not counted: one admission is left, as storage says.
    expect(await takeOne(stub, "kept", spec)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await takeOne(stub, "kept", spec)).allowed).toBe(false);
  });
});
