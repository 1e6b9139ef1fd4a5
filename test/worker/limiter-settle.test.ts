import { abortAllDurableObjects, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SettleRequest, TakeRequest } from "../../src/limiter/bucket-table.ts";
import type { LeaseDecision } from "../../src/limiter/sliding-window.ts";
import type { WindowRule } from "../../src/limiter/window-rules.ts";

/** The callers' clock (the object decides by the time it is given): the wall clock's, fixed for the file. */
const NOW = Date.now();

function freshStub() {
  return env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`limiter-settle-test-${Math.random()}`));
}

const windows: WindowRule[] = [{ capacity: 1_000, windowMs: 60_000 }];
const take = (cost: number, reserve?: string): TakeRequest => ({ id: "k", windows, cost, want: 1, leaseMs: 0, forRequest: true, reserve });

describe("RateLimiter Durable Object: settled costs", () => {
  it("replaces a reservation's estimate once, keeps it across a restart, and ignores the duplicate", async () => {
    const stub = freshStub();
    const [reserved] = (await stub.takeAll([take(800, "a1")], NOW)) as LeaseDecision[];
    expect(reserved).toMatchObject({ allowed: true, remaining: 200 });
    await abortAllDurableObjects();
    const restarted = env.RATE_LIMITER.get(stub.id);
    // The response reported 1,150: 350 more than reserved, past the capacity of 1,000.
    expect(await restarted.settleAll([{ id: "k", reservation: "a1", cost: 1_150 }], NOW)).toEqual({ applied: [true] });
    expect(await restarted.settleAll([{ id: "k", reservation: "a1", cost: 0 }], NOW)).toEqual({ applied: [false] });
    const [after] = (await restarted.takeAll([take(1)], NOW)) as LeaseDecision[];
    expect(after).toMatchObject({ allowed: false, remaining: 0 });
    expect(after!.retryAfterMs).toBeGreaterThan(59_000);
  });

  it("refunds what the response did not spend", async () => {
    const stub = freshStub();
    await stub.takeAll([take(1_000, "b1")], NOW);
    expect(await stub.settleAll([{ id: "k", reservation: "b1", cost: 300 }], NOW)).toEqual({ applied: [true] });
    const [next] = (await stub.takeAll([take(700)], NOW)) as LeaseDecision[];
    expect(next).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("refuses settles over its bounds: 2^53, a string, a 10 MB reservation id", async () => {
    const stub = freshStub();
    const settle = (request: Partial<SettleRequest>) => stub.settleAll([{ id: "k", reservation: "c1", cost: 1, ...request } as SettleRequest], NOW);
    expect(await settle({ cost: 2 ** 53 })).toEqual({ refused: "a settled cost is an integer from 0 to 1000000" });
    expect(await settle({ cost: "5" as unknown as number })).toEqual({ refused: "a settled cost is an integer from 0 to 1000000" });
    expect(await settle({ reservation: "x".repeat(10 * 1024 * 1024) })).toEqual({ refused: "a reservation id is 1 to 64 letters, digits, - or _" });
    expect(await stub.takeAll([take(1, "x".repeat(65))], NOW)).toEqual({ refused: "a reservation id is 1 to 64 letters, digits, - or _" });
  });
});
