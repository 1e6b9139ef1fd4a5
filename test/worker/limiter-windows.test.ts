import { abortAllDurableObjects, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TakeRequest } from "../../src/limiter/bucket-table.ts";
import type { LeaseDecision } from "../../src/limiter/sliding-window.ts";
import type { WindowRule } from "../../src/limiter/window-rules.ts";

/** The callers' clock (the object decides by the time it is given): the wall clock's, fixed for the file. */
const NOW = Date.now();

function freshStub() {
  return env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`limiter-windows-test-${Math.random()}`));
}

const take = (id: string, windows: readonly WindowRule[], cost: number): TakeRequest => ({
  id,
  spec: { capacity: 1, windowMs: 1_000 },
  windows,
  cost,
  want: 1,
  leaseMs: 0,
  forRequest: true,
});

describe("RateLimiter Durable Object: several windows and costs", () => {
  it("decides every window of a take in one call, all or nothing, and keeps them across a restart", async () => {
    const stub = freshStub();
    const windows: WindowRule[] = [
      { capacity: 10, windowMs: 60_000 },
      { capacity: 12, period: "day", offsetMinutes: 0 },
    ];
    const answers = (await stub.takeAll([take("k", windows, 6), take("k", windows, 5), take("k", windows, 4)], NOW)) as LeaseDecision[];
    expect(answers.map((d) => d.allowed)).toEqual([true, false, true]);
    // The refused cost of 5 was counted in neither window: 10 used of the minute, 10 of the day.
    expect(answers[2]!.windows).toEqual([expect.objectContaining({ remaining: 0 }), expect.objectContaining({ remaining: 2 })]);
    await abortAllDurableObjects();
    const restarted = env.RATE_LIMITER.get(stub.id);
    const longer = (await restarted.takeAll([take("k", [{ capacity: 100, windowMs: 120_000 }, windows[1]!], 2)], NOW)) as LeaseDecision[];
    expect(longer[0]).toMatchObject({ allowed: true, remaining: 0 });
    const stored = await runInDurableObject(restarted, (_instance, state) => state.storage.sql.exec("SELECT window_ms, state FROM buckets").one());
    expect(stored.window_ms).toBe(0);
    expect(JSON.parse(stored.state as string).map((list: unknown[]) => list[0])).toEqual(["s120000", "day+0", "s60000"]);
  });

  it("reads a row written in the seed's form as its one window", async () => {
    const stub = freshStub();
    const now = NOW;
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec(
        "CREATE TABLE IF NOT EXISTS buckets (id TEXT PRIMARY KEY, window_ms INTEGER NOT NULL, expires INTEGER NOT NULL, state TEXT NOT NULL) WITHOUT ROWID",
      );
      state.storage.sql.exec("INSERT INTO buckets VALUES ('old', 60000, ?, ?)", now + 60_000, JSON.stringify([now - (now % 1000), now, 9]));
    });
    await abortAllDurableObjects();
    const answers = (await env.RATE_LIMITER.get(stub.id).takeAll([take("old", [{ capacity: 10, windowMs: 60_000 }], 2)], NOW)) as LeaseDecision[];
    expect(answers[0]).toMatchObject({ allowed: false });
  });

  it("refuses takes over its bounds: a cost of 2^53, nine windows", async () => {
    const stub = freshStub();
    const one: WindowRule[] = [{ capacity: 10, windowMs: 60_000 }];
    expect(await stub.takeAll([take("k", one, 2 ** 53)], NOW)).toEqual({ refused: "a cost is an integer from 0 to 1000000" });
    expect(
      await stub.takeAll(
        [
          take(
            "k",
            Array.from({ length: 9 }, (_, i) => ({ capacity: 10, windowMs: (i + 1) * 1_000 })),
            1,
          ),
        ],
        NOW,
      ),
    ).toEqual({
      refused: "a take has 1 to 8 windows",
    });
  });
});
