import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallsInFlight, type Ticket } from "../../../src/limiter/calls-in-flight.ts";

const STALE_MS = 1000;

/** Requests arriving, looking at their tickets, answering, going away and time passing, in any order. */
describe("CallsInFlight, whatever the order of events", () => {
  it("every take is sent once, by its own request or carried by one call, and again only when that call went stale", () => {
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
        const clock = { now: 0 };
        const calls = new CallsInFlight<string, string>(() => clock.now, maxCarried);
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
          // Sent again only when the call carrying it went stale (its request went away, or never answered in time).
          if (sentBy.has(request.take)) expect(clock.now - (request.ticket?.carriedAt ?? clock.now)).toBeGreaterThan(STALE_MS);
          request.sending = calls.send("b", STALE_MS);
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
        for (const count of sentBy.values()) expect(count).toBeLessThanOrEqual(2);
        for (const request of requests) {
          // A take answered by a call was sent in it; one still waiting (not carried) was sent by nobody yet.
          if (request.ticket?.outcome && "answer" in request.ticket.outcome) expect(sentBy.get(request.take)).toBeGreaterThanOrEqual(1);
        }
        expect(calls.size).toBeLessThanOrEqual(1);
        expect(requests.every((request) => request.gone || (sentBy.get(request.take) ?? 0) >= 1)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
