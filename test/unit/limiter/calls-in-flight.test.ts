import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallsInFlight, MAX_BUCKETS_IN_FLIGHT, MAX_WAITING_PER_BUCKET, type Ticket } from "../../../src/limiter/calls-in-flight.ts";

const STALE_MS = 1000;

function setup(maxCarried?: number) {
  const clock = { now: 0 };
  const calls = new CallsInFlight<string, string>(() => clock.now, maxCarried);
  return { clock, calls };
}

describe("CallsInFlight", () => {
  it("a take waits only while its bucket has a call out, and gets the answer the call wrote for it", () => {
    const { calls } = setup();
    expect(calls.canWait("b", STALE_MS)).toBe(false);
    const first = calls.send("b");
    expect(first.carried).toEqual([]);
    expect(calls.canWait("b", STALE_MS)).toBe(true);
    expect(calls.canWait("other", STALE_MS)).toBe(false);
    const ticket = calls.wait("b", "take-2", 5);
    expect(calls.settled("b", ticket, STALE_MS)).toBe(false);
    // The call out went before the take came: it does not carry it. Once it ends, the take's request sends the next.
    calls.end("b", first.call, first.carried);
    expect(calls.settled("b", ticket, STALE_MS)).toBe(true);
    expect(ticket.outcome).toBeUndefined();
    expect(calls.size).toBe(0);
  });

  it("the next call carries every take waiting, oldest first, up to its bound; the rest wait for the one after", () => {
    const { calls } = setup(2);
    const first = calls.send("b");
    const tickets = ["t1", "t2", "t3", "t4"].map((take, i) => calls.wait("b", take, i));
    calls.end("b", first.call, first.carried);
    // t1's request finds no call out and sends one: it carries t2 and t3 (the bound is 2); t4 waits on.
    expect(calls.settled("b", tickets[0]!, STALE_MS)).toBe(true);
    const second = calls.send("b");
    expect(second.carried.map((ticket) => ticket.take)).toEqual(["t2", "t3"]);
    expect(calls.settled("b", tickets[1]!, STALE_MS)).toBe(false);
    expect(calls.settled("b", tickets[3]!, STALE_MS)).toBe(false);
    second.carried[0]!.outcome = { answer: "a2" };
    second.carried[1]!.outcome = { answer: "a3" };
    calls.end("b", second.call, second.carried);
    expect(calls.settled("b", tickets[1]!, STALE_MS)).toBe(true);
    expect(tickets[1]!.outcome).toEqual({ answer: "a2" });
    expect(tickets[2]!.outcome).toEqual({ answer: "a3" });
    expect(calls.settled("b", tickets[3]!, STALE_MS)).toBe(true);
    expect(tickets[3]!.outcome).toBeUndefined();
    expect(calls.size).toBe(0);
  });

  it("a call that ends without an answer for a carried take gives it an error, never leaves it waiting", () => {
    const { calls } = setup();
    const first = calls.send("b");
    const ticket = calls.wait("b", "t", 0);
    calls.end("b", first.call, first.carried);
    // Another request sends the next call, carrying t, and its call ends without writing t's answer.
    const second = calls.send("b");
    expect(second.carried).toEqual([ticket]);
    calls.end("b", second.call, second.carried);
    expect(calls.settled("b", ticket, STALE_MS)).toBe(true);
    expect(ticket.outcome).toEqual({ error: new Error("the call carrying this take ended without its answer") });
  });

  it("a call whose request went away stops counting as out: waiting takes send their own, carried ones get an error", () => {
    const { clock, calls } = setup();
    calls.send("b"); // never ended
    const waiting = calls.wait("b", "w", 0);
    clock.now = STALE_MS;
    expect(calls.settled("b", waiting, STALE_MS)).toBe(false);
    clock.now = STALE_MS + 1;
    expect(calls.canWait("b", STALE_MS)).toBe(false);
    expect(calls.settled("b", waiting, STALE_MS)).toBe(true);
    expect(waiting.outcome).toBeUndefined();
    // w's request sends its call; r waits for the next; s sends that one, carrying r, and then goes away too.
    const own = calls.send("b");
    const rider = calls.wait("b", "r", clock.now);
    calls.end("b", own.call, own.carried);
    const vanishing = calls.send("b");
    expect(vanishing.carried).toEqual([rider]);
    clock.now += STALE_MS;
    expect(calls.settled("b", rider, STALE_MS)).toBe(false);
    clock.now += 1;
    expect(calls.settled("b", rider, STALE_MS)).toBe(true);
    expect(rider.outcome).toEqual({ error: new Error("the request carrying this take went away before its call answered") });
    // The stale call's own end, arriving late, does not end the call sent after it.
    const after = calls.send("b");
    calls.end("b", vanishing.call, vanishing.carried);
    expect(calls.canWait("b", STALE_MS)).toBe(true);
    calls.end("b", after.call, after.carried);
    expect(calls.canWait("b", STALE_MS)).toBe(false);
  });

  it("a waiting request sleeps until its call is due by how long calls have lately taken, then looks every few ms", () => {
    const { clock, calls } = setup();
    // Calls that take 40 ms teach it their length (a moving average).
    for (let i = 0; i < 40; i++) {
      const call = calls.send("slow");
      clock.now += 40;
      calls.end("slow", call.call, call.carried);
    }
    const out = calls.send("b");
    const ticket = calls.wait("b", "t", clock.now);
    clock.now += 10;
    expect(calls.sleepMs("b", ticket)).toBeGreaterThanOrEqual(29);
    expect(calls.sleepMs("b", ticket)).toBeLessThanOrEqual(31);
    clock.now += 40;
    expect(calls.sleepMs("b", ticket)).toBe(4);
    calls.end("b", out.call, out.carried);
  });

  it("a take that stops waiting is never carried", () => {
    const { calls } = setup();
    const first = calls.send("b");
    const gone = calls.wait("b", "gone", 0);
    const stays = calls.wait("b", "stays", 0);
    calls.abandon("b", gone);
    calls.end("b", first.call, first.carried);
    expect(calls.settled("b", stays, STALE_MS)).toBe(true);
    expect(calls.send("b").carried).toEqual([]);
    expect(gone.carriedAt).toBeUndefined();
  });

  it(`holds at most ${MAX_WAITING_PER_BUCKET} waiting takes a bucket and ${MAX_BUCKETS_IN_FLIGHT} buckets (hostile: a burst of 100,000 keys)`, () => {
    const { calls } = setup();
    calls.send("hot");
    for (let i = 0; i < MAX_WAITING_PER_BUCKET; i++) calls.wait("hot", `t${i}`, 0);
    expect(calls.canWait("hot", STALE_MS)).toBe(false);
    const first = calls.wait("k0", "x", 0);
    calls.send("k0");
    let most = 0;
    for (let i = 1; i < 100_000; i++) {
      calls.send(`k${i}`);
      most = Math.max(most, calls.size);
    }
    expect(most).toBeLessThanOrEqual(MAX_BUCKETS_IN_FLIGHT);
    // A forgotten bucket's waiting take is not stranded: its request sends its own.
    expect(calls.settled("k0", first, STALE_MS)).toBe(true);
  });

  it("every take is sent exactly once, by its own request or carried by one call, whatever the order of events", () => {
    type Event =
      | { kind: "arrive" }
      | { kind: "poll"; who: number }
      | { kind: "answer"; who: number }
      | { kind: "vanish"; who: number }
      | { kind: "tick"; ms: number };
    const event: fc.Arbitrary<Event> = fc.oneof(
      { arbitrary: fc.constant({ kind: "arrive" as const }), weight: 3 },
      { arbitrary: fc.record({ kind: fc.constant("poll" as const), who: fc.nat(3) }), weight: 4 },
      { arbitrary: fc.record({ kind: fc.constant("answer" as const), who: fc.nat(3) }), weight: 3 },
      { arbitrary: fc.record({ kind: fc.constant("vanish" as const), who: fc.nat(3) }), weight: 1 },
      { arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 600 }) }), weight: 1 },
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 120 }), fc.integer({ min: 1, max: 4 }), (events, maxCarried) => {
        const { clock, calls } = setup(maxCarried);
        type Request = {
          take: string;
          ticket?: Ticket<string, string>;
          sending?: { call: number; carried: Ticket<string, string>[] };
          done: boolean;
          gone: boolean;
        };
        const requests: Request[] = [];
        const sentBy = new Map<string, number>();
        const note = (take: string) => sentBy.set(take, (sentBy.get(take) ?? 0) + 1);
        const sendOwn = (request: Request) => {
          request.sending = calls.send("b");
          note(request.take);
          for (const ticket of request.sending.carried) note(ticket.take);
        };
        for (const step of events) {
          if (step.kind === "tick") clock.now += step.ms;
          else if (step.kind === "arrive") {
            const request: Request = { take: `t${requests.length}`, done: false, gone: false };
            requests.push(request);
            if (calls.canWait("b", STALE_MS)) request.ticket = calls.wait("b", request.take, clock.now);
            else sendOwn(request);
          } else {
            // One of the last few requests: those are the ones still waiting or sending.
            const request = requests[requests.length - 1 - (step.who % Math.max(1, requests.length))];
            if (!request || request.done || request.gone) continue;
            if (step.kind === "vanish") {
              // Its code stops: a sender never ends its call, a waiter never looks again.
              request.gone = true;
              continue;
            }
            if (step.kind === "poll" && request.ticket && !request.sending) {
              if (!calls.settled("b", request.ticket, STALE_MS)) continue;
              if (request.ticket.outcome) request.done = true;
              else sendOwn(request);
            } else if (step.kind === "answer" && request.sending) {
              for (const ticket of request.sending.carried) ticket.outcome = { answer: `answer of ${ticket.take}` };
              calls.end("b", request.sending.call, request.sending.carried);
              request.done = true;
            }
          }
        }
        // Whatever happened, every request still running gets its answer once the others run on (and gone ones go stale).
        for (let round = 0; round < 2 * requests.length + 2; round++) {
          clock.now += STALE_MS + 1;
          for (const request of requests) {
            if (request.done || request.gone) continue;
            if (request.sending) {
              for (const ticket of request.sending.carried) ticket.outcome = { answer: `answer of ${ticket.take}` };
              calls.end("b", request.sending.call, request.sending.carried);
              request.done = true;
            } else if (request.ticket && calls.settled("b", request.ticket, STALE_MS)) {
              if (request.ticket.outcome) request.done = true;
              else sendOwn(request);
            }
          }
        }
        expect(requests.filter((request) => !request.done && !request.gone)).toEqual([]);
        for (const count of sentBy.values()) expect(count).toBe(1);
        for (const request of requests) {
          // A take answered by a call was sent in it; one still waiting (not carried) was sent by nobody yet.
          if (request.ticket?.outcome && "answer" in request.ticket.outcome) expect(sentBy.get(request.take)).toBe(1);
        }
        expect(calls.size).toBeLessThanOrEqual(1);
        expect(requests.every((request) => request.gone || sentBy.get(request.take) === 1)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
