import { describe, expect, it } from "vitest";
import { CallsInFlight, MAX_KEYS_IN_FLIGHT, MAX_WAITING_PER_KEY, MAX_WAITING_PER_ISOLATE } from "../../../src/limiter/calls-in-flight.ts";

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
    const first = calls.send("b", STALE_MS);
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
    const first = calls.send("b", STALE_MS);
    const tickets = ["t1", "t2", "t3", "t4"].map((take, i) => calls.wait("b", take, i));
    calls.end("b", first.call, first.carried);
    // t1's request finds no call out and sends one: it carries t2 and t3 (the bound is 2); t4 waits on.
    expect(calls.settled("b", tickets[0]!, STALE_MS)).toBe(true);
    const second = calls.send("b", STALE_MS);
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

  it("a call sent but not yet on its way also carries the takes that came meanwhile, up to its bound; a stale one takes none", () => {
    const { clock, calls } = setup(3);
    const call = calls.send("b", STALE_MS);
    expect(call.carried).toEqual([]);
    const tickets = ["t1", "t2", "t3", "t4"].map((take) => calls.wait("b", take, clock.now));
    calls.collect("b", call.call, STALE_MS, call.carried);
    expect(call.carried.map((ticket) => ticket.take)).toEqual(["t1", "t2", "t3"]);
    expect(tickets[0]!.carriedAt).toBe(clock.now);
    expect(calls.waiting).toBe(1);
    calls.end("b", call.call, call.carried);
    // t4's request sends the next; its call goes stale before it is on its way, and takes no one along.
    expect(calls.settled("b", tickets[3]!, STALE_MS)).toBe(true);
    const next = calls.send("b", STALE_MS);
    const late = calls.wait("b", "late", clock.now);
    clock.now += STALE_MS + 1;
    calls.collect("b", next.call, STALE_MS, next.carried);
    expect(next.carried).toEqual([]);
    expect(late.carriedAt).toBeUndefined();
  });

  it("a call's time limit starts when it is on its way: a long turn before it does not make its riders send again", () => {
    const { clock, calls } = setup();
    const first = calls.send("b", STALE_MS);
    const rider = calls.wait("b", "rider", clock.now);
    calls.end("b", first.call, first.carried);
    const second = calls.send("b", STALE_MS); // carries the rider from the start
    expect(second.carried).toEqual([rider]);
    // The isolate was busy: the turn before the call goes out took 900 ms. Its time limit starts now.
    clock.now += 900;
    calls.collect("b", second.call, STALE_MS, second.carried);
    clock.now += 200;
    expect(calls.isOut("b", STALE_MS)).toBe(true);
    expect(calls.settled("b", rider, STALE_MS)).toBe(false);
    clock.now += STALE_MS;
    expect(calls.settled("b", rider, STALE_MS)).toBe(true);
    expect(rider.outcome).toBeUndefined();
  });

  it("a call that ends without an answer for a carried take gives it an error, never leaves it waiting", () => {
    const { calls } = setup();
    const first = calls.send("b", STALE_MS);
    const ticket = calls.wait("b", "t", 0);
    calls.end("b", first.call, first.carried);
    // Another request sends the next call, carrying t, and its call ends without writing t's answer.
    const second = calls.send("b", STALE_MS);
    expect(second.carried).toEqual([ticket]);
    calls.end("b", second.call, second.carried);
    expect(calls.settled("b", ticket, STALE_MS)).toBe(true);
    expect(ticket.outcome).toEqual({ error: new Error("the call carrying this take ended without its answer") });
  });

  it("a call whose request went away stops counting as out: the takes it left waiting or carried are sent by their own requests", () => {
    const { clock, calls } = setup();
    calls.send("b", STALE_MS); // never ended
    const waiting = calls.wait("b", "w", 0);
    clock.now = STALE_MS;
    expect(calls.settled("b", waiting, STALE_MS)).toBe(false);
    clock.now = STALE_MS + 1;
    expect(calls.canWait("b", STALE_MS)).toBe(false);
    expect(calls.settled("b", waiting, STALE_MS)).toBe(true);
    expect(waiting.outcome).toBeUndefined();
    // w's request sends its call; r waits for the next; s sends that one, carrying r, and then goes away too.
    const own = calls.send("b", STALE_MS);
    const rider = calls.wait("b", "r", clock.now);
    calls.end("b", own.call, own.carried);
    const vanishing = calls.send("b", STALE_MS);
    expect(vanishing.carried).toEqual([rider]);
    clock.now += STALE_MS;
    expect(calls.settled("b", rider, STALE_MS)).toBe(false);
    clock.now += 1;
    expect(calls.settled("b", rider, STALE_MS)).toBe(true);
    // No outcome: its request sends it again (it may be counted twice, never passed uncounted).
    expect(rider.outcome).toBeUndefined();
    // The stale call's own end, arriving late, does not end the call sent after it.
    const after = calls.send("b", STALE_MS);
    calls.end("b", vanishing.call, vanishing.carried);
    expect(calls.canWait("b", STALE_MS)).toBe(true);
    calls.end("b", after.call, after.carried);
    expect(calls.canWait("b", STALE_MS)).toBe(false);
  });

  it("a waiting request sleeps until its call is due by how long calls have lately taken, then looks every few ms", () => {
    const { clock, calls } = setup();
    // Calls that take 40 ms teach it their length (a moving average).
    for (let i = 0; i < 40; i++) {
      const call = calls.send("slow", STALE_MS);
      clock.now += 40;
      calls.end("slow", call.call, call.carried);
    }
    const out = calls.send("b", STALE_MS);
    const ticket = calls.wait("b", "t", clock.now);
    clock.now += 10;
    // Due one and a half call lengths after it went out: 60 ms, 50 from now.
    expect(calls.sleepMs("b", ticket)).toBeGreaterThanOrEqual(49);
    expect(calls.sleepMs("b", ticket)).toBeLessThanOrEqual(51);
    // Overdue: a quarter of a call's length, doubling with every look (at most 64 ms).
    clock.now += 60;
    expect([1, 2, 3, 4, 5].map(() => calls.sleepMs("b", ticket))).toEqual([10, 20, 40, 64, 64]);
    calls.end("b", out.call, out.carried);
  });

  it("after a slow spell, a few fast calls bring the riders' first sleep back down", () => {
    const { clock, calls } = setup();
    const callTaking = (ms: number) => {
      const call = calls.send("c", STALE_MS);
      clock.now += ms;
      calls.end("c", call.call, call.carried);
    };
    for (let i = 0; i < 40; i++) callTaking(900);
    // A rider's first sleep on a call that then takes 5 ms itself.
    const firstSleep = () => {
      const out = calls.send("b", STALE_MS);
      const sleep = calls.sleepMs("b", calls.wait("b", "t", clock.now));
      clock.now += 5;
      calls.end("b", out.call, out.carried);
      return sleep;
    };
    expect(firstSleep()).toBeGreaterThan(1200);
    // Four fast calls in all: a rider of the next sleeps under a tenth of the slow length, not most of it (as an
    // average moving an eighth a call would: 1.5 × 900 × (7/8)⁴ ≈ 790 ms).
    for (let i = 0; i < 3; i++) callTaking(5);
    expect(firstSleep()).toBeLessThanOrEqual(93);
    for (let i = 0; i < 3; i++) callTaking(5);
    expect(firstSleep()).toBeLessThanOrEqual(15);
  });

  it("hostile: a client that makes the carrier of 255 takes and then disconnects fails none of them", () => {
    const { clock, calls } = setup();
    const first = calls.send("b", STALE_MS);
    const riders = Array.from({ length: MAX_WAITING_PER_KEY }, (_, i) => calls.wait("b", `t${i}`, 0));
    // The next request cannot wait; the gateway sends its take alone (limiter-client.ts), leaving the bucket's call as it is.
    expect(calls.canWait("b", STALE_MS)).toBe(false);
    expect(calls.isOut("b", STALE_MS)).toBe(true);
    calls.end("b", first.call, first.carried);
    // A rider sends the next call, carrying 255, and its client disconnects: the call is never ended.
    expect(calls.settled("b", riders[0]!, STALE_MS)).toBe(true);
    const chosen = calls.send("b", STALE_MS);
    expect(chosen.carried).toHaveLength(255);
    clock.now = STALE_MS + 1;
    const settled = riders.slice(1).filter((ticket) => calls.settled("b", ticket, STALE_MS));
    expect(settled.length).toBeGreaterThanOrEqual(255);
    // Every one of them is sent again by its own request: none gets an error (which would let it pass uncounted).
    expect(settled.filter((ticket) => ticket.outcome !== undefined)).toEqual([]);
  });

  it("a request waiting on a slow call looks at its ticket a few dozen times a second, not a thousand", () => {
    const { clock, calls } = setup();
    calls.send("b", STALE_MS); // the object is slow: no answer within the time limit
    const ticket = calls.wait("b", "w", 0);
    let looks = 0;
    while (!calls.settled("b", ticket, STALE_MS)) {
      clock.now += Math.min(calls.sleepMs("b", ticket), STALE_MS);
      looks++;
    }
    expect(looks).toBeLessThanOrEqual(25);
  });

  it("takes of requests that went away are dropped, not carried; a live request looking again waits again", () => {
    const { clock, calls } = setup();
    const first = calls.send("b", STALE_MS);
    const gone = Array.from({ length: 10 }, (_, i) => calls.wait("b", `gone${i}`, 0)); // never look again
    const live = calls.wait("b", "live", 0);
    calls.end("b", first.call, first.carried);
    expect(calls.waiting).toBe(11);
    clock.now = 10 * 60_000;
    expect(calls.settled("b", live, STALE_MS)).toBe(true); // no call out: live sends the next one
    const next = calls.send("b", STALE_MS);
    expect(next.carried).toEqual([]);
    expect(calls.waiting).toBe(0);
    expect(gone.every((ticket) => ticket.carriedAt === undefined)).toBe(true);
    // A request whose take was dropped while it slept (a look every time limit at the least) joins the next call.
    const out = calls.send("other", STALE_MS);
    const sleeper = calls.wait("other", "sleeper", clock.now);
    clock.now += 2 * STALE_MS + 1;
    calls.end("other", out.call, out.carried);
    const carrier = calls.send("other", STALE_MS);
    expect(carrier.carried).toEqual([]);
    expect(calls.settled("other", sleeper, STALE_MS)).toBe(false);
    calls.end("other", carrier.call, carrier.carried);
    expect(calls.settled("other", sleeper, STALE_MS)).toBe(true);
  });

  it(`holds at most ${MAX_WAITING_PER_ISOLATE} waiting takes in an isolate, all buckets together`, () => {
    const { calls } = setup();
    let bucket = 0;
    while (calls.waiting < MAX_WAITING_PER_ISOLATE) {
      const id = `k${bucket++}`;
      calls.send(id, STALE_MS);
      while (calls.canWait(id, STALE_MS)) calls.wait(id, "t", 0);
    }
    expect(calls.waiting).toBe(MAX_WAITING_PER_ISOLATE);
    calls.send("fresh", STALE_MS);
    expect(calls.canWait("fresh", STALE_MS)).toBe(false);
  });

  it("takes of requests that went away cannot keep batching off: at the isolate's bound they are swept out", () => {
    const { clock, calls } = setup();
    let bucket = 0;
    while (calls.waiting < MAX_WAITING_PER_ISOLATE) {
      const id = `dead${bucket++}`;
      calls.send(id, STALE_MS);
      while (calls.canWait(id, STALE_MS)) calls.wait(id, "t", 0); // never looked at again
    }
    calls.send("fresh", STALE_MS);
    expect(calls.canWait("fresh", STALE_MS)).toBe(false);
    clock.now = 2 * STALE_MS + 1;
    calls.send("fresh", STALE_MS);
    expect(calls.canWait("fresh", STALE_MS)).toBe(true);
    expect(calls.waiting).toBe(0);
  });

  it("the takes waiting on a forgotten key move to its next call instead of each sending its own", () => {
    const { calls } = setup();
    calls.send("b", STALE_MS);
    const waiting = Array.from({ length: 5 }, (_, i) => calls.wait("b", `w${i}`, 0));
    for (let i = 0; i < MAX_KEYS_IN_FLIGHT; i++) calls.send(`k${i}`, STALE_MS); // "b" is forgotten
    expect(calls.waiting).toBe(0);
    expect(calls.settled("b", waiting[0]!, STALE_MS)).toBe(true); // no call out on "b": w0 sends it
    calls.send("b", STALE_MS);
    expect(waiting.slice(1).map((ticket) => calls.settled("b", ticket, STALE_MS))).toEqual([false, false, false, false]);
    expect(calls.waiting).toBe(4);
  });

  it("a take that stops waiting is never carried", () => {
    const { calls } = setup();
    const first = calls.send("b", STALE_MS);
    const gone = calls.wait("b", "gone", 0);
    const stays = calls.wait("b", "stays", 0);
    calls.abandon(gone);
    calls.end("b", first.call, first.carried);
    expect(calls.settled("b", stays, STALE_MS)).toBe(true);
    expect(calls.send("b", STALE_MS).carried).toEqual([]);
    expect(gone.carriedAt).toBeUndefined();
  });

  it(`holds at most ${MAX_WAITING_PER_KEY} waiting takes a key and ${MAX_KEYS_IN_FLIGHT} keys (hostile: a burst of 100,000 keys)`, () => {
    const { calls } = setup();
    calls.send("hot", STALE_MS);
    for (let i = 0; i < MAX_WAITING_PER_KEY; i++) calls.wait("hot", `t${i}`, 0);
    expect(calls.canWait("hot", STALE_MS)).toBe(false);
    const first = calls.wait("k0", "x", 0);
    calls.send("k0", STALE_MS);
    let most = 0;
    for (let i = 1; i < 100_000; i++) {
      calls.send(`k${i}`, STALE_MS);
      most = Math.max(most, calls.size);
    }
    expect(most).toBeLessThanOrEqual(MAX_KEYS_IN_FLIGHT);
    // A forgotten bucket's waiting take is not stranded: its request sends its own.
    expect(calls.settled("k0", first, STALE_MS)).toBe(true);
  });
});
