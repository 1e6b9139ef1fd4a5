/**
 * The isolate's body budget: holds grow within the total and each party's share, come back whole exactly once,
 * and abandoned ones (no cover for three read idle times) come back when a read would otherwise be refused. A
 * request body read takes its bytes as they arrive and gives them back when the read ends, however it ends.
 */

import { createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bytesWithin } from "../../../src/bounded-read.ts";
import { verifyWebhookAction, verifyWebhookConfig } from "../../../src/policy/actions/verify-webhook.ts";
import { expressionCompiler } from "../../../src/policy/cel.ts";
import type { Exchange } from "../../../src/policy/exchange.ts";
import { makeExchange } from "../support/exchange.ts";
import { MemoryCounter } from "../support/memory-counter.ts";
import { BODY_BUDGET_LIMITS, BodyBudget, type BodyBudgetLimits, type BodyHold } from "../../../src/policy/body-budget.ts";
import { RequestBody } from "../../../src/policy/request-body.ts";
import { compiledStep } from "../support/compiled-step.ts";

const LIMITS: BodyBudgetLimits = { totalBytes: 1000, partyBytes: 400, clientBytes: 250, readIdleMs: 1000, retryAfterSeconds: 2 };

function clock(start = 0) {
  let at = start;
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

describe("BodyBudget", () => {
  it("the Worker's budget keeps held bodies, with the copy a finished read makes, to a quarter of an isolate's 128 MiB", () => {
    expect(BODY_BUDGET_LIMITS.totalBytes * 2).toBeLessThanOrEqual((128 * 1024 * 1024) / 4);
    expect(BODY_BUDGET_LIMITS.partyBytes).toBeLessThan(BODY_BUDGET_LIMITS.totalBytes);
  });

  it("a hold grows to what it covers, and a cover past the party's share is refused and changes nothing", () => {
    const budget = new BodyBudget(LIMITS);
    const hold = budget.hold("a");
    expect(hold.cover(300)).toBe(true);
    expect(hold.cover(100)).toBe(true);
    expect(hold.bytes).toBe(300);
    expect(hold.cover(401)).toBe(false);
    expect(hold.bytes).toBe(300);
    expect(budget.heldBy("a")).toBe(300);
    expect(budget.stats.refused).toBe(1);
  });

  it("a party at its share leaves the rest to others, up to the total", () => {
    const budget = new BodyBudget(LIMITS);
    expect(budget.hold("a").cover(400)).toBe(true);
    expect(budget.hold("a").cover(1)).toBe(false);
    expect(budget.hold("b").cover(400)).toBe(true);
    expect(budget.hold("c").cover(201)).toBe(false);
    expect(budget.hold("c").cover(200)).toBe(true);
    expect(budget.heldBytes).toBe(1000);
  });

  it("hostile: one client stalling uploads holds at most its share of a party; the party's other clients go on", () => {
    const budget = new BodyBudget(LIMITS);
    expect(budget.hold("a", "203.0.113.9").cover(200)).toBe(true);
    expect(budget.hold("a", "203.0.113.9").cover(51)).toBe(false);
    expect(budget.hold("b", "203.0.113.9").cover(51)).toBe(false);
    expect(budget.hold("a", "198.51.100.7").cover(200)).toBe(true);
    expect(budget.heldByClient("203.0.113.9")).toBe(200);
    expect(budget.heldBy("a")).toBe(400);
  });

  it("a forged client name past 64 characters is kept by its first 64", () => {
    const budget = new BodyBudget(LIMITS);
    const forged = "x".repeat(16 * 1024);
    expect(budget.hold("a", forged).cover(250)).toBe(true);
    expect(budget.hold("a", `${forged}y`).cover(1)).toBe(false);
    expect(budget.heldByClient("x".repeat(64))).toBe(250);
  });

  it("released, a hold gives back all its bytes once, and covers nothing after", () => {
    const budget = new BodyBudget(LIMITS);
    const hold = budget.hold("a");
    hold.cover(250);
    hold.release();
    hold.release();
    expect(budget.heldBytes).toBe(0);
    expect(budget.heldBy("a")).toBe(0);
    expect(hold.cover(10)).toBe(false);
    expect(budget.heldBytes).toBe(0);
  });

  it("a hold not covered for three read idle times is given back when another read would be refused", () => {
    const time = clock();
    const budget = new BodyBudget(LIMITS, time.now);
    const abandoned = budget.hold("a");
    abandoned.cover(400);
    time.advance(3 * LIMITS.readIdleMs);
    // Not yet past: still held, so the party's next read is refused.
    expect(budget.hold("a").cover(1)).toBe(false);
    time.advance(1);
    const next = budget.hold("a");
    expect(next.cover(400)).toBe(true);
    expect(budget.heldBy("a")).toBe(400);
    expect(budget.stats.expired).toBe(1);
    // The abandoned hold's own release, should its code ever run, gives nothing back twice.
    abandoned.release();
    expect(budget.heldBy("a")).toBe(400);
  });

  it("a hold covered within its lease is never taken back", () => {
    const time = clock();
    const budget = new BodyBudget(LIMITS, time.now);
    const live = budget.hold("a");
    live.cover(200);
    time.advance(2 * LIMITS.readIdleMs);
    live.cover(300);
    time.advance(2 * LIMITS.readIdleMs);
    expect(budget.hold("a").cover(101)).toBe(false);
    expect(live.bytes).toBe(300);
    expect(budget.stats.expired).toBe(0);
  });

  /** One step of a run: a new hold, a cover of one, a release of one, or time passing. */
  type Step =
    | { op: "hold"; party: number; client: number }
    | { op: "cover"; index: number; bytes: number }
    | { op: "release"; index: number }
    | { op: "wait"; ms: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ op: fc.constant("hold" as const), party: fc.nat(3), client: fc.nat(2) }),
    fc.record({ op: fc.constant("cover" as const), index: fc.nat(40), bytes: fc.nat(600) }),
    fc.record({ op: fc.constant("release" as const), index: fc.nat(40) }),
    fc.record({ op: fc.constant("wait" as const), ms: fc.nat(2 * LIMITS.readIdleMs) }),
  );

  it("whatever reads do, what is held is what live holds cover, never negative, never past a limit, and 0 once all are released", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const time = clock();
        const budget = new BodyBudget(LIMITS, time.now);
        const holds: Array<{ hold: BodyHold; party: string; released: boolean }> = [];
        for (const next of steps) {
          // Client 0 is not told apart (no address), the others are.
          if (next.op === "hold")
            holds.push({ hold: budget.hold(`p${next.party}`, next.client === 0 ? "" : `c${next.client}`), party: `p${next.party}`, released: false });
          else if (next.op === "wait") time.advance(next.ms);
          else {
            const entry = holds[next.index % Math.max(1, holds.length)];
            if (!entry) continue;
            if (next.op === "release") {
              entry.hold.release();
              entry.released = true;
            } else {
              const before = entry.hold.bytes;
              const covered = entry.hold.cover(next.bytes);
              if (covered) expect(entry.hold.bytes).toBe(Math.max(before, next.bytes));
              else expect(entry.hold.bytes).toBe(before);
            }
          }
          expect(budget.heldBytes).toBeGreaterThanOrEqual(0);
          expect(budget.heldBytes).toBeLessThanOrEqual(LIMITS.totalBytes);
          let sum = 0;
          for (const party of ["p0", "p1", "p2", "p3"]) {
            const held = budget.heldBy(party);
            expect(held).toBeGreaterThanOrEqual(0);
            expect(held).toBeLessThanOrEqual(LIMITS.partyBytes);
            sum += held;
          }
          expect(sum).toBe(budget.heldBytes);
          for (const client of ["c1", "c2"]) {
            expect(budget.heldByClient(client)).toBeGreaterThanOrEqual(0);
            expect(budget.heldByClient(client)).toBeLessThanOrEqual(LIMITS.clientBytes);
          }
        }
        // Releasing each hold (twice, as a finally after a catch might) brings the budget back to exactly 0.
        for (const entry of holds) {
          entry.hold.release();
          entry.hold.release();
        }
        expect(budget.heldBytes).toBe(0);
        for (const party of ["p0", "p1", "p2", "p3"]) expect(budget.heldBy(party)).toBe(0);
        for (const client of ["c1", "c2"]) expect(budget.heldByClient(client)).toBe(0);
      }),
      { numRuns: 500 },
    );
  });
});

/** A stream that sends `chunks`, then (unless `end`) nothing more until errored. */
function streamOf(chunks: Uint8Array[], end = true) {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      for (const chunk of chunks) c.enqueue(chunk);
      if (end) c.close();
    },
  });
  return { stream, fail: (error: Error) => controller.error(error) };
}

describe("a request body read within the budget", () => {
  it("holds its bytes while the body arrives and while they wait for the upstream, and gives them back when it has taken them", async () => {
    const budget = new BodyBudget(LIMITS);
    const { stream, fail } = streamOf([new Uint8Array(100)], false);
    const body = new RequestBody(stream, null, 1000, { budget, party: "a" });
    const read = body.read();
    await expect.poll(() => budget.heldBy("a")).toBe(100);
    fail(new Error("the client went away"));
    expect(await read).toMatchObject({ ok: false, tooLarge: false, message: "the request body could not be read: the client went away" });
    expect(budget.heldBytes).toBe(0);

    const whole = new RequestBody(streamOf([new Uint8Array(100), new Uint8Array(50)]).stream, null, 1000, { budget, party: "a" });
    expect(await whole.read()).toMatchObject({ ok: true });
    // Read whole, the bytes are still in memory, to be sent on: they stay counted until the upstream has them.
    expect(budget.heldBytes).toBe(150);
    whole.release();
    whole.release();
    expect(budget.heldBytes).toBe(0);
  });

  it("hostile: bodies read whole and waiting on a slow upstream fill the party's share, so no more are read", async () => {
    const budget = new BodyBudget(LIMITS);
    const waiting = Array.from({ length: 4 }, () => new RequestBody(streamOf([new Uint8Array(100)]).stream, null, 1000, { budget, party: "a" }));
    for (const body of waiting) expect(await body.read()).toMatchObject({ ok: true });
    expect(budget.heldBy("a")).toBe(400);
    const next = new RequestBody(streamOf([new Uint8Array(100)]).stream, null, 1000, { budget, party: "a" });
    expect(await next.read()).toMatchObject({ ok: false, busy: true });
    for (const body of waiting) body.release();
    expect(budget.heldBytes).toBe(0);
  });

  it("takes a declared length up front, and a body the party cannot hold is refused before a byte is read", async () => {
    const budget = new BodyBudget(LIMITS);
    const first = streamOf([new Uint8Array(10)], false);
    const holding = new RequestBody(first.stream, "300", 1000, { budget, party: "a" }).read();
    await expect.poll(() => budget.heldBy("a")).toBe(300);
    const refused = new RequestBody(streamOf([new Uint8Array(10)]).stream, "101", 1000, { budget, party: "a" });
    const read = await refused.read();
    expect(read).toMatchObject({ ok: false, tooLarge: false, busy: true, retryAfter: 2 });
    expect(refused.forwardBody()).toEqual(new Uint8Array(0));
    // Another party is not held up by this one.
    const other = new RequestBody(streamOf([new Uint8Array(100)]).stream, "100", 1000, { budget, party: "b" });
    expect(await other.read()).toMatchObject({ ok: true });
    other.release();
    first.fail(new Error("gone"));
    await holding;
    expect(budget.heldBytes).toBe(0);
  });

  it("stops reading, and gives back what it held, when a chunk would pass the party's share", async () => {
    const budget = new BodyBudget(LIMITS);
    const read = await new RequestBody(streamOf([new Uint8Array(300), new Uint8Array(300)]).stream, null, 1000, { budget, party: "a" }).read();
    expect(read).toMatchObject({ ok: false, busy: true });
    expect(budget.heldBytes).toBe(0);
  });

  it("breaks off a body that sends nothing for the read idle time, and gives back its bytes", async () => {
    const budget = new BodyBudget({ ...LIMITS, readIdleMs: 20 });
    const { stream } = streamOf([new Uint8Array(100)], false);
    const read = await new RequestBody(stream, null, 1000, { budget, party: "a" }).read();
    expect(read).toMatchObject({ ok: false, tooLarge: false, message: "the request body could not be read: nothing arrived for 0.02 s" });
    expect(budget.heldBytes).toBe(0);
  });

  it("a settle's bounded read gives its hold back however it ends: whole, too large, refused or broken off", async () => {
    const budget = new BodyBudget(LIMITS);
    expect(await bytesWithin(streamOf([new Uint8Array(10)]).stream, 100, budget.hold("a"))).toMatchObject({ ok: true });
    expect(await bytesWithin(streamOf([new Uint8Array(101)]).stream, 100, budget.hold("a"))).toEqual({ ok: false, why: "too-large" });
    expect(await bytesWithin(streamOf([new Uint8Array(401)]).stream, 1000, budget.hold("a"))).toEqual({ ok: false, why: "busy" });
    const broken = streamOf([new Uint8Array(10)], false);
    const pending = bytesWithin(broken.stream, 100, budget.hold("a"));
    await expect.poll(() => budget.heldBytes).toBe(10);
    broken.fail(new Error("upstream reset"));
    await expect(pending).rejects.toThrow("upstream reset");
    expect(budget.heldBytes).toBe(0);
  });

  it("a settle's bounded read that sends nothing for the read idle time is given up, and its hold given back", async () => {
    const budget = new BodyBudget(LIMITS);
    const silent = streamOf([new Uint8Array(10)], false);
    await expect(bytesWithin(silent.stream, 100, budget.hold("a"), 20)).rejects.toThrow("nothing arrived for 0.02 s");
    expect(budget.heldBytes).toBe(0);
  });
});

describe("verify-webhook with the budget spent", () => {
  const payload = new TextEncoder().encode('{"zen":"budget"}');
  const signature = `sha256=${createHmac("sha256", "s3cret").update(payload).digest("hex")}`;
  function exchangeReading(budget: BodyBudget): Exchange {
    const base = makeExchange({ method: "POST", url: "https://hooks.example.test/github", headers: { "x-hub-signature-256": signature } });
    return { ...base, request: { ...base.request, body: new RequestBody(streamOf([payload.slice()]).stream, null, 1000, { budget, party: "a" }) } };
  }

  for (const enforce of [true, false]) {
    it(`answers 503 with retry-after, not a verdict, with enforce: ${enforce}`, async () => {
      const budget = new BodyBudget(LIMITS);
      budget.hold("a").cover(LIMITS.partyBytes);
      const config = verifyWebhookConfig.parse({ provider: "github", secret: "s3cret", enforce });
      const compiled = compiledStep(
        verifyWebhookAction.compile(config, { phase: "inbound", position: "inbound[0].actions[0]", expressions: expressionCompiler() }),
      );
      const exchange = exchangeReading(budget);
      const answer = (await compiled.run(exchange, { counter: new MemoryCounter(0) })) as Response;
      expect(answer.status).toBe(503);
      expect(answer.headers.get("retry-after")).toBe("2");
      expect(await answer.json()).toMatchObject({
        error_code: "ERR_SVC_3204",
        details: { action: "inbound[0].actions[0]", provider: "github", retry_after: 2 },
      });
      expect(exchange.vars.verify_webhook.verified).toBe(false);
    });
  }
});
