import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Frame, type FrameOf, INITIAL_STREAM_WINDOW, LARGE_DATA_CHUNK, MAX_DATA_CHUNK, ResetCode } from "../../../src/relay/index.ts";
import { SendQueue } from "../../../src/relay/send-queue.ts";
import { RelayStream, type StreamFailure, StreamTable } from "../../../src/relay/stream-table.ts";
import { WindowBudget } from "../../../src/relay/window-budget.ts";
import { dataFrame } from "../../shared/frames.ts";

type Flow = FrameOf<"data"> | FrameOf<"end"> | FrameOf<"window">;

/**
 * Two ends of the relay over a channel that reorders frames within a stream's direction as the runtime may:
 * a sender whose streams each carry a body (as the edge sends request bodies, the agent response bodies), a
 * receiver that passes bytes on and acknowledges them when the schedule says, with a window budget.
 */
function relay(bodies: Uint8Array[], largest: number, budget: WindowBudget) {
  const toReceiver: Frame[] = [];
  const toSender: Frame[] = [];
  const closed = { sender: new Map<number, StreamFailure | undefined>(), receiver: new Map<number, StreamFailure | undefined>() };
  const sentAfterClose: Frame[] = [];
  const sender = new StreamTable<RelayStream>({
    send: (frame) => {
      if ("stream" in frame && closed.sender.has(frame.stream)) sentAfterClose.push(frame);
      toReceiver.push(frame);
    },
    peer: "the receiver",
    closed: (stream, failure) => closed.sender.set(stream.id, failure),
  });
  const receiver = new StreamTable<RelayStream>({
    send: (frame) => {
      if ("stream" in frame && closed.receiver.has(frame.stream)) sentAfterClose.push(frame);
      toSender.push(frame);
    },
    peer: "the sender",
    budget,
    closed: (stream, failure) => closed.receiver.set(stream.id, failure),
  });
  const queues = new Map<number, SendQueue>();
  const received = new Map<number, Uint8Array[]>();
  const unacknowledged: Array<[number, number]> = [];
  bodies.forEach((body, index) => {
    const id = index + 1;
    const out = new RelayStream(id, { data: () => undefined, end: () => undefined }, { headFirst: false });
    const queue = new SendQueue(out.core.send);
    queue.push(body);
    queue.finish();
    queues.set(id, queue);
    sender.add(out);
    received.set(id, []);
    const into: RelayStream = new RelayStream(
      id,
      {
        data: (bytes) => {
          received.get(id)?.push(bytes);
          unacknowledged.push([id, bytes.byteLength]);
        },
        end: () => receiver.close(into),
      },
      { headFirst: false },
    );
    receiver.add(into);
  });
  const pump = (id: number) => {
    const stream = sender.get(id);
    const queue = queues.get(id);
    if (!stream || !queue) return;
    for (const frame of queue.frames(largest)) toReceiver.push(frame);
    const end = queue.end();
    if (end) {
      toReceiver.push(end);
      sender.close(stream);
    }
  };
  for (const id of queues.keys()) pump(id);

  /** Takes the frame at `pick` (modulo) of a stream direction's queue, keeping each frame's place otherwise. */
  const take = (queue: Frame[], pick: number) => queue.splice(pick % queue.length, 1)[0];
  return {
    sender,
    receiver,
    closed,
    received,
    sentAfterClose,
    pending: () => toReceiver.length + toSender.length + unacknowledged.length,
    /** One step of the schedule: deliver a frame either way, or acknowledge bytes passed on. */
    step(choice: number): void {
      const kind = choice % 3;
      if (kind === 0 && toReceiver.length > 0) {
        const frame = take(toReceiver, choice >> 2);
        const stream = "stream" in frame ? receiver.get(frame.stream) : undefined;
        if (!stream) return;
        if (frame.type === "reset") receiver.close(stream, frame);
        else receiver.flow(stream, frame as Flow);
        receiver.endBatch();
      } else if (kind === 1 && toSender.length > 0) {
        const frame = take(toSender, choice >> 2);
        const stream = "stream" in frame ? sender.get(frame.stream) : undefined;
        if (!stream) return;
        if (frame.type === "reset") sender.close(stream, frame);
        else if (sender.flow(stream, frame as Flow)) pump(stream.id);
      } else if (unacknowledged.length > 0) {
        const [id, bytes] = unacknowledged.splice((choice >> 2) % unacknowledged.length, 1)[0];
        const stream = receiver.get(id);
        const window = stream?.core.receive.acknowledge(bytes);
        if (stream && window) toSender.push(window);
      }
    },
  };
}

/** Runs the schedule, then delivers everything still in flight, in order: every honest exchange comes to rest. */
function run(net: ReturnType<typeof relay>, choices: number[], reset?: { at: number; side: "sender" | "receiver"; stream: number }) {
  for (let step = 0; step < 200_000 && net.pending() > 0; step++) {
    if (reset && step === reset.at) {
      const table = net[reset.side];
      const stream = table.get(reset.stream);
      if (stream) table.reset(stream, ResetCode.cancelled, "gone");
    }
    net.step(choices[step % choices.length] + step);
  }
  if (reset && net[reset.side].get(reset.stream)) net[reset.side].reset(net[reset.side].get(reset.stream)!, ResetCode.cancelled, "gone");
  for (let step = 0; step < 200_000 && net.pending() > 0; step++) net.step(step % 3 === 0 ? 0 : step % 3 === 1 ? 1 : 2);
}

const bodies = fc
  .array(fc.integer({ min: 0, max: 3 * INITIAL_STREAM_WINDOW }), { minLength: 1, maxLength: 5 })
  .map((sizes) => sizes.map((size, i) => new Uint8Array(size).fill(i + 1)));

describe("relay stream table: two ends over a channel that reorders frames", () => {
  it("any interleaving delivers every body whole, in order, once; no stream sticks; the budget comes back", () => {
    fc.assert(
      fc.property(
        bodies,
        fc.integer({ min: MAX_DATA_CHUNK, max: LARGE_DATA_CHUNK }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 64 }),
        (sent, largest, choices) => {
          const budget = new WindowBudget();
          const net = relay(sent, largest, budget);
          run(net, choices);
          sent.forEach((body, index) => {
            expect(Buffer.concat(net.received.get(index + 1)!).equals(body)).toBe(true);
            expect(net.closed.sender.get(index + 1)).toBeUndefined();
            expect(net.closed.receiver.has(index + 1)).toBe(true);
            expect(net.closed.receiver.get(index + 1)).toBeUndefined();
          });
          expect(net.sender.size + net.receiver.size).toBe(0);
          expect(net.sentAfterClose).toEqual([]);
          expect(budget.inUse).toBe(0);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("a reset at any point, from either end, closes the stream at both ends with its reason, and only that stream", () => {
    fc.assert(
      fc.property(
        bodies,
        fc.array(fc.nat(), { minLength: 1, maxLength: 64 }),
        fc.nat({ max: 400 }),
        fc.constantFrom("sender" as const, "receiver" as const),
        fc.nat(),
        (sent, choices, at, side, pick) => {
          const budget = new WindowBudget();
          const net = relay(sent, MAX_DATA_CHUNK, budget);
          const stream = (pick % sent.length) + 1;
          run(net, choices, { at, side, stream });
          expect(net.sender.size + net.receiver.size).toBe(0);
          expect(budget.inUse).toBe(0);
          const failure = { code: ResetCode.cancelled, message: "gone" };
          const resetHere = net.closed[side].get(stream);
          // the stream either ended before the reset came, or both ends closed it with the reset's reason
          if (resetHere !== undefined) {
            expect(resetHere).toEqual(failure);
            const other = net.closed[side === "sender" ? "receiver" : "sender"].get(stream);
            if (other !== undefined) expect(other).toMatchObject(failure);
          }
          sent.forEach((body, index) => {
            if (index + 1 !== stream) expect(Buffer.concat(net.received.get(index + 1)!).equals(body)).toBe(true);
          });
          expect(net.sentAfterClose.filter((frame) => frame.type !== "reset")).toEqual([]);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("a peer that sends past the window it was given is reset at that frame, with protocol_error, and its boost returns", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: MAX_DATA_CHUNK }), { minLength: 1, maxLength: 40 }), fc.boolean(), (sizes, boosted) => {
        const budget = new WindowBudget();
        const sent: Frame[] = [];
        const closed: Array<StreamFailure | undefined> = [];
        const table = new StreamTable<RelayStream>({
          send: (frame) => sent.push(frame),
          peer: "the edge",
          budget,
          closed: (_, failure) => closed.push(failure),
        });
        const stream = new RelayStream(1, { data: () => undefined, end: () => undefined }, { headFirst: false });
        table.add(stream);
        let window = INITIAL_STREAM_WINDOW;
        let inFlight = 0;
        for (const [seq, size] of sizes.entries()) {
          table.flow(stream, dataFrame(1, seq, size));
          inFlight += size;
          if (seq === 0 && boosted) {
            table.endBatch();
            window += budget.inUse;
          }
          if (inFlight > window) {
            expect(stream.closed).toBe(true);
            expect(sent.at(-1)).toMatchObject({
              type: "reset",
              code: ResetCode.protocolError,
              message: expect.stringContaining("goes past the flow-control window"),
            });
            expect(closed).toEqual([expect.objectContaining({ code: ResetCode.protocolError })]);
            expect(budget.inUse).toBe(0);
            return;
          }
          expect(stream.closed).toBe(false);
        }
        expect(table.has(1)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
