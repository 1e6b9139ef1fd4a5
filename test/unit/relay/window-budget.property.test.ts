import fc from "fast-check";
import { dataFrame } from "../../shared/frames.ts";
import { describe, expect, it } from "vitest";
import { MAX_DATA_CHUNK, type FrameOf } from "../../../src/relay/index.ts";
import { StreamCore } from "../../../src/relay/stream-core.ts";
import { SESSION_BOOST_BUDGET, STREAM_WINDOW_BOOST, WindowBudget } from "../../../src/relay/window-budget.ts";

const data = (seq: number, length: number): FrameOf<"data"> => dataFrame(1, seq, length);

describe("window budget: the boosts of a session's streams", () => {
  it("never hands out more than the budget in all, nor more than the per-stream boost to one, whatever the order of takes and gives", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant("take" as const), fc.nat({ max: 40 })), { maxLength: 200 }), (steps) => {
        const budget = new WindowBudget();
        const live: number[] = [];
        for (const step of steps) {
          if (step === "take") {
            const granted = budget.take();
            expect(granted).toBeGreaterThanOrEqual(0);
            expect(granted).toBeLessThanOrEqual(STREAM_WINDOW_BOOST);
            live.push(granted);
          } else if (live.length > 0) {
            budget.give(live.splice(step % live.length, 1)[0]!);
          }
          const held = live.reduce((sum, n) => sum + n, 0);
          expect(held).toBeLessThanOrEqual(SESSION_BOOST_BUDGET);
          expect(budget.inUse).toBe(held);
        }
      }),
    );
  });

  it("gives a stream the whole boost while the budget has it, then what is left, then nothing until a stream ends", () => {
    const budget = new WindowBudget(10, 4);
    expect([budget.take(), budget.take(), budget.take(), budget.take()]).toEqual([4, 4, 2, 0]);
    budget.give(4);
    expect(budget.take()).toBe(4);
  });

  it("grants a stream its boost as a window frame and takes it back when the stream ends; a stream that has ended gets none", () => {
    const budget = new WindowBudget(STREAM_WINDOW_BOOST, STREAM_WINDOW_BOOST);
    const core = (id: number) => new StreamCore(id, { data: () => undefined, end: () => undefined }, { headFirst: false, receiveWindow: 100 });
    const open = { boost: 0, core: core(1) };
    expect(budget.grant(open)).toEqual({ type: "window", stream: 1, increment: STREAM_WINDOW_BOOST });
    expect(open.boost).toBe(STREAM_WINDOW_BOOST);
    const other = { boost: 0, core: core(2) };
    expect(budget.grant(other)).toBeUndefined(); // the budget is spent
    budget.release(open);
    expect(open.boost).toBe(0);
    expect(budget.inUse).toBe(0);
    const ended = { boost: 0, core: core(3) };
    ended.core.onFrame({ type: "end", stream: 3, count: 0 });
    expect(budget.grant(ended)).toBeUndefined();
    expect(budget.inUse).toBe(0);
  });
});

describe("stream core: a larger window, and acknowledgements in batches", () => {
  it("a boosted window holds the peer to the larger size: one byte past it is a protocol error", () => {
    const core = new StreamCore(1, { data: () => undefined, end: () => undefined }, { headFirst: false, receiveWindow: 100 });
    expect(core.receive.enlarge(50)).toEqual({ type: "window", stream: 1, increment: 50 });
    expect(core.receive.size).toBe(150);
    expect(core.onFrame(data(0, 150))).toBeUndefined();
    expect(core.onFrame(data(1, 1))).toEqual({ code: "protocol_error", message: "data frame 1 goes past the flow-control window of 150 bytes" });
  });

  it("offers no larger window once the peer has ended", () => {
    const core = new StreamCore(1, { data: () => undefined, end: () => undefined }, { headFirst: false, receiveWindow: 100 });
    core.onFrame(data(0, 10));
    core.onFrame({ type: "end", stream: 1, count: 1 });
    expect(core.receive.enlarge(50)).toBeUndefined();
    expect(core.receive.size).toBe(100);
  });

  it("gives bytes back in batches of at least a quarter of the window, or all at once when the peer may be stuck; never more than was passed on", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 * MAX_DATA_CHUNK }),
        fc.array(fc.tuple(fc.integer({ min: 1, max: MAX_DATA_CHUNK }), fc.nat()), { minLength: 1, maxLength: 60 }),
        (window, steps) => {
          const core = new StreamCore(1, { data: () => undefined, end: () => undefined }, { headFirst: false, receiveWindow: window });
          let inFlight = 0; // what the peer has sent and not had back
          let received = 0;
          let passed = 0;
          let returned = 0;
          let seq = 0;
          for (const [size, pass] of steps) {
            if (inFlight + size <= window) {
              expect(core.onFrame(data(seq++, size))).toBeUndefined();
              inFlight += size;
              received += size;
            }
            const bytes = Math.min(received - passed, pass % (MAX_DATA_CHUNK + 1));
            if (bytes === 0) continue;
            passed += bytes;
            const ack = core.receive.acknowledge(bytes);
            if (!ack) continue;
            const stuck = received === passed && window - (passed - returned) < MAX_DATA_CHUNK;
            expect(ack.increment >= window / 4 || stuck).toBe(true);
            returned += ack.increment;
            inFlight -= ack.increment;
            expect(returned).toBeLessThanOrEqual(passed);
          }
          // once everything received is passed on, a peer that cannot fit its largest frame always has its bytes back
          if (received === passed && window - (passed - returned) < MAX_DATA_CHUNK) expect(passed - returned).toBe(0);
        },
      ),
    );
  });
});
