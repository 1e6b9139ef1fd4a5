import fc from "fast-check";
import { dataFrame } from "../../shared/frames.ts";
import { describe, expect, it } from "vitest";
import { StreamCore, MAX_STREAM_WINDOW } from "../../../src/relay/stream-core.ts";
import { LARGE_DATA_CHUNK, MAX_DATA_CHUNK, MAX_RESET_MESSAGE, payloadSchemas, type FrameOf } from "../../../src/relay/index.ts";

/** A receiving end that records what its core delivers. */
function receiver(window: number, headFirst = false) {
  const delivered: Uint8Array[] = [];
  let ends = 0;
  const core = new StreamCore(1, { data: (bytes) => delivered.push(bytes), end: () => ends++ }, { headFirst, receiveWindow: window });
  return { core, body: () => Buffer.concat(delivered), ends: () => ends, deliveredBytes: () => delivered.reduce((sum, bytes) => sum + bytes.byteLength, 0) };
}

const data = (seq: number, length: number): FrameOf<"data"> => dataFrame(1, seq, length);

describe("stream core: a sender and a receiver over a channel that reorders", () => {
  it("any interleaving of frames sized by nextFrameSize is accepted, never sticks, and delivers the body in order, once", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 3 * MAX_DATA_CHUNK }), { maxLength: 12 }),
        fc.integer({ min: MAX_DATA_CHUNK, max: 4 * MAX_DATA_CHUNK }),
        fc.integer({ min: MAX_DATA_CHUNK, max: LARGE_DATA_CHUNK }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 64 }),
        (chunks, window, largest, choices) => {
          const sink = receiver(window);
          const sender = new StreamCore(1, { data: () => undefined, end: () => undefined }, { headFirst: false, sendWindow: window });
          const body = Buffer.concat(chunks);
          let offset = 0;
          const nextSize = () => sender.send.nextFrameSize(body.byteLength - offset, largest);
          const toReceiver: Array<FrameOf<"data"> | FrameOf<"end">> = [];
          const toSender: Array<FrameOf<"window">> = [];
          let delivered = 0;
          let ended = false;
          for (let step = 0; step < 100_000; step++) {
            const choice = choices[step % choices.length] + step;
            // the sender sends what the window allows, as the edge and the agent do; the end after the last data frame
            for (let size = nextSize(); offset < body.byteLength && size > 0; size = nextSize()) {
              expect(size).toBeLessThanOrEqual(largest);
              const frame = sender.send.frame(body.subarray(offset, offset + size));
              sender.send.sent(frame);
              toReceiver.push(frame);
              offset += size;
            }
            if (offset === body.byteLength && !ended) {
              ended = true;
              toReceiver.push(sender.send.end());
            }
            // the channel hands over any frame in flight, in any order; acknowledgements too (whichever
            // there is when only one kind is in flight, so no schedule starves the stream)
            if (toReceiver.length > 0 && (choice % 3 !== 0 || toSender.length === 0)) {
              const [frame] = toReceiver.splice(choice % toReceiver.length, 1);
              expect(sink.core.onFrame(frame)).toBeUndefined();
            } else if (toSender.length > 0) {
              const [frame] = toSender.splice(choice % toSender.length, 1);
              expect(sender.onFrame(frame)).toBeUndefined();
            }
            // the consumer passes delivered bytes on, some at a time
            const fresh = sink.deliveredBytes() - delivered;
            if (fresh > 0 && (choice % 2 === 0 || (toReceiver.length === 0 && toSender.length === 0))) {
              delivered += fresh;
              const ack = sink.core.receive.acknowledge(fresh);
              if (ack) toSender.push(ack);
            }
            if (ended && toReceiver.length === 0 && sink.ends() === 1) break;
            if (toReceiver.length === 0 && toSender.length === 0 && sink.deliveredBytes() === delivered && offset < body.byteLength && nextSize() === 0) {
              throw new Error("stuck: the window never reopened");
            }
          }
          expect(sink.ends()).toBe(1);
          expect(sink.body()).toEqual(body);
        },
      ),
    );
  });

  it("any data frame past the window is a protocol error on the stream, whatever came before", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 * MAX_DATA_CHUNK }),
        fc.array(fc.integer({ min: 1, max: MAX_DATA_CHUNK }), { minLength: 1, maxLength: 20 }),
        (window, sizes) => {
          const sink = receiver(window);
          let inFlight = 0;
          for (const [seq, size] of sizes.entries()) {
            const verdict = sink.core.onFrame(data(seq, size));
            inFlight += size;
            if (inFlight > window) {
              expect(verdict).toEqual({ code: "protocol_error", message: `data frame ${seq} goes past the flow-control window of ${window} bytes` });
              return;
            }
            expect(verdict).toBeUndefined();
          }
        },
      ),
    );
  });

  it("bytes acknowledged may be sent again: the window is what is in flight, not a total", () => {
    const sink = receiver(100);
    expect(sink.core.onFrame(data(0, 100))).toBeUndefined();
    expect(sink.core.receive.acknowledge(60)).toEqual({ type: "window", stream: 1, increment: 60 });
    expect(sink.core.onFrame(data(1, 60))).toBeUndefined();
    expect(sink.core.onFrame(data(2, 1))).toMatchObject({ code: "protocol_error" });
  });
});

describe("stream core: the rest of the state machine", () => {
  it("delivers nothing before the head when made head-first, then everything in order", () => {
    const sink = receiver(1000, true);
    sink.core.onFrame(data(1, 2));
    sink.core.onFrame(data(0, 1));
    sink.core.onFrame({ type: "end", stream: 1, count: 2 });
    expect(sink.deliveredBytes()).toBe(0);
    sink.core.receive.open();
    expect(sink.body()).toEqual(Buffer.from([0, 1, 1]));
    expect(sink.ends()).toBe(1);
  });

  it("refuses a repeated frame, a frame past the end, and an end that contradicts the frames seen", () => {
    const repeated = receiver(1000);
    repeated.core.onFrame(data(0, 1));
    expect(repeated.core.onFrame(data(0, 1))).toEqual({ code: "protocol_error", message: "data frame 0 repeated or past the end" });
    const pastEnd = receiver(1000);
    pastEnd.core.onFrame({ type: "end", stream: 1, count: 1 });
    expect(pastEnd.core.onFrame(data(1, 1))).toEqual({ code: "protocol_error", message: "data frame 1 repeated or past the end" });
    const contradicted = receiver(1000);
    contradicted.core.onFrame(data(3, 1));
    expect(contradicted.core.onFrame({ type: "end", stream: 1, count: 2 })).toEqual({
      code: "protocol_error",
      message: "end after 2 data frames contradicts the frames sent",
    });
  });

  it("asks for no acknowledgement once the peer has ended (it sends nothing more)", () => {
    const sink = receiver(1000);
    sink.core.onFrame(data(0, 10));
    sink.core.onFrame({ type: "end", stream: 1, count: 1 });
    expect(sink.core.receive.acknowledge(10)).toBeUndefined();
  });

  it("sizes frames to the window, waits below a frame's worth, and refuses a grant past the largest window", () => {
    const core = new StreamCore(5, { data: () => undefined, end: () => undefined }, { headFirst: false, sendWindow: 10 });
    expect(core.send.nextFrameSize(MAX_DATA_CHUNK + 10, LARGE_DATA_CHUNK)).toBe(0); // 10 bytes of window: less than a frame's worth
    expect(core.send.nextFrameSize(10, LARGE_DATA_CHUNK)).toBe(10); // all that waits fits
    const first = core.send.frame(new Uint8Array(MAX_DATA_CHUNK));
    const second = core.send.frame(new Uint8Array(10));
    expect(first).toMatchObject({ stream: 5, seq: 0 });
    expect(second).toMatchObject({ stream: 5, seq: 1 });
    expect(core.send.fits(first)).toBe(false);
    expect(() => core.send.sent(first)).toThrow(RangeError);
    expect(core.send.fits(second)).toBe(true);
    core.send.sent(second);
    expect(core.send.available).toBe(0);
    expect(core.onFrame({ type: "window", stream: 5, increment: 2 * MAX_DATA_CHUNK })).toBeUndefined();
    expect(core.send.nextFrameSize(LARGE_DATA_CHUNK, LARGE_DATA_CHUNK)).toBe(2 * MAX_DATA_CHUNK); // what the window takes
    expect(core.send.nextFrameSize(LARGE_DATA_CHUNK, MAX_DATA_CHUNK)).toBe(MAX_DATA_CHUNK); // no more than the peer takes
    core.send.sent(core.send.frame(new Uint8Array(2 * MAX_DATA_CHUNK)));
    expect(core.onFrame({ type: "window", stream: 5, increment: 10 })).toBeUndefined();
    expect(core.send.available).toBe(10);
    expect(core.onFrame({ type: "window", stream: 5, increment: MAX_STREAM_WINDOW })).toEqual({
      code: "protocol_error",
      message: `window increment of ${MAX_STREAM_WINDOW} grows the window past ${MAX_STREAM_WINDOW} bytes`,
    });
    expect(core.send.end()).toEqual({ type: "end", stream: 5, count: 3 });
    expect(core.reset({ code: "cancelled", message: "bye" })).toEqual({ type: "reset", stream: 5, code: "cancelled", message: "bye" });
    // a message the peer's schema would refuse (ending the session) is cut to what it takes
    const long = core.reset({ code: "upstream_error", message: "é".repeat(MAX_RESET_MESSAGE + 10) });
    expect(long.message).toHaveLength(MAX_RESET_MESSAGE);
    expect(payloadSchemas.reset.safeParse({ code: long.code, message: long.message }).success).toBe(true);
  });
});
