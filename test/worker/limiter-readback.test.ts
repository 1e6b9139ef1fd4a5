/** The RateLimiter object's read-back: what its buckets hold, read without counting, as its takes see them. */

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { WindowReading } from "../../src/limiter/bucket-readback.ts";
import type { TakeRequest } from "../../src/limiter/bucket-table.ts";
import type { LeaseDecision } from "../../src/limiter/sliding-window.ts";
import type { WindowRule } from "../../src/limiter/window-rules.ts";

let objects = 0;
function freshStub() {
  return env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`limiter-readback-test-${objects++}-${Math.random()}`));
}
type Stub = ReturnType<typeof freshStub>;

async function take(stub: Stub, request: TakeRequest): Promise<LeaseDecision> {
  const answer = await stub.takeAll([request], Date.now());
  if (!Array.isArray(answer)) throw new Error(answer.refused);
  return answer[0]!;
}

async function read(stub: Stub, id: string, windows: readonly WindowRule[]): Promise<WindowReading[]> {
  const answer = await stub.readAll([{ id, windows }], Date.now());
  if (!Array.isArray(answer)) throw new Error(answer.refused);
  return answer[0]!;
}

const MINUTE = { capacity: 10, windowMs: 60_000 };

describe("RateLimiter.readAll", () => {
  it("after admissions and a refusal: used, remaining, and reading changes nothing", async () => {
    const stub = freshStub();
    for (let i = 0; i < 10; i++) expect((await take(stub, { id: "b", spec: MINUTE, want: 1, leaseMs: 0, forRequest: true })).allowed).toBe(true);
    const refused = await take(stub, { id: "b", spec: MINUTE, want: 1, leaseMs: 0, forRequest: true });
    expect(refused.allowed).toBe(false);
    const [window] = await read(stub, "b", [MINUTE]);
    expect(window).toMatchObject({ capacity: 10, used: 10, remaining: 0 });
    expect(window!.retryAfterMs).toBeGreaterThan(0);
    expect(window!.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(await read(stub, "b", [MINUTE])).toHaveLength(1);
    expect((await read(stub, "b", [MINUTE]))[0]).toMatchObject({ used: 10 });
  });

  it("a lease is counted at once; handed back, it is not", async () => {
    const stub = freshStub();
    const rule = { capacity: 1000, windowMs: 60_000 };
    const leased = await take(stub, { id: "b", spec: rule, want: 50, leaseMs: 1000, forRequest: true });
    expect(leased.granted).toBe(50);
    expect((await read(stub, "b", [rule]))[0]).toMatchObject({ used: 50, remaining: 950 });
    await take(stub, { id: "b", spec: rule, want: 1, leaseMs: 0, forRequest: true, returned: { start: leased.leaseStart, count: 49 } });
    expect((await read(stub, "b", [rule]))[0]).toMatchObject({ used: 2, remaining: 998 });
  });

  it("a reservation settled lower reads lower, with several windows", async () => {
    const stub = freshStub();
    const windows: WindowRule[] = [
      { capacity: 100, windowMs: 60_000 },
      { capacity: 1000, period: "day", offsetMinutes: 0 },
    ];
    const reserve = crypto.randomUUID();
    expect((await take(stub, { id: "b", windows, cost: 40, want: 1, leaseMs: 0, forRequest: true, reserve })).allowed).toBe(true);
    expect((await read(stub, "b", windows)).map((w) => w.used)).toEqual([40, 40]);
    const settled = await stub.settleAll([{ id: "b", reservation: reserve, cost: 15 }], Date.now());
    expect(settled).toEqual({ applied: [true] });
    expect((await read(stub, "b", windows)).map((w) => [w.used, w.remaining])).toEqual([
      [15, 85],
      [15, 985],
    ]);
  });

  it("refuses a call it would not decide: an id that is not a hash, nine windows, a time that is not one", async () => {
    const stub = freshStub();
    expect(await stub.readAll([{ id: "b", windows: [MINUTE] }], Number.NaN)).toMatchObject({ refused: expect.stringMatching(/now is a time/) });
    expect(await stub.readAll([{ id: "x".repeat(65), windows: [MINUTE] }], Date.now())).toMatchObject({ refused: expect.stringMatching(/bucket ids/) });
    const nine = Array.from({ length: 9 }, (_, i) => ({ capacity: 1, windowMs: (i + 1) * 1000 }));
    expect(await stub.readAll([{ id: "b", windows: nine }], Date.now())).toMatchObject({ refused: expect.stringMatching(/1 to 8 windows/) });
  });
});
