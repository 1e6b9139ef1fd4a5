import { AsyncLocalStorage } from "node:async_hooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TakeRequest } from "../../src/limiter/bucket-table.ts";
import { ShardBatcher } from "../../src/limiter/shard-batcher.ts";
import type { LeaseDecision } from "../../src/limiter/sliding-window.ts";

const decisionFor = (take: TakeRequest): LeaseDecision => ({
  allowed: true,
  granted: take.want,
  leaseStart: 0,
  remaining: 7,
  retryAfterMs: 0,
  resetMs: 0,
  refillMs: 0,
});
const takeOf = (id: string, want = 1): TakeRequest => ({ id, spec: { capacity: 10, windowMs: 1_000 }, want, leaseMs: 0, forRequest: true });

/** A store whose calls are answered by the test, one at a time. */
function heldStore() {
  const calls: Array<{ shard: string; takes: readonly TakeRequest[]; answer: () => void; fail: (error: Error) => void }> = [];
  const send = (shard: string, takes: readonly TakeRequest[]) =>
    new Promise<readonly LeaseDecision[]>((resolve, reject) => calls.push({ shard, takes, answer: () => resolve(takes.map(decisionFor)), fail: reject }));
  return { calls, send };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("ShardBatcher", () => {
  it("sends at once when idle, and batches what arrives while a call is in flight", async () => {
    const { calls, send } = heldStore();
    const batcher = new ShardBatcher(send, 8, 60_000);
    const kept: Promise<unknown>[] = [];
    const first = batcher.take("s", takeOf("a"), (work) => kept.push(work));
    const queued = [batcher.take("s", takeOf("b", 2)), batcher.take("s", takeOf("c", 3))];
    const other = batcher.take("t", takeOf("d"));
    expect(calls.map((call) => [call.shard, call.takes.map((take) => take.id)])).toEqual([
      ["s", ["a"]],
      ["t", ["d"]],
    ]);
    calls[0]!.answer();
    expect((await first).granted).toBe(1);
    // a's request sends what waited behind its call, after its own response.
    await vi.waitFor(() => expect(calls).toHaveLength(3));
    expect(kept).toHaveLength(1);
    expect(calls[2]!.takes.map((take) => take.id)).toEqual(["b", "c"]);
    calls[2]!.answer();
    expect((await Promise.all(queued)).map((decision) => decision.granted)).toEqual([2, 3]);
    calls[1]!.answer();
    await other;
    expect(batcher.stats).toEqual({ storeCalls: 3, storeTakes: 4 });
    await vi.waitFor(() => expect(batcher.busyShards).toBe(0));
  });

  it("never sends more than a batch in one call: a full batch goes even while a call is in flight", () => {
    const { calls, send } = heldStore();
    const batcher = new ShardBatcher(send, 3, 60_000);
    for (let i = 0; i < 9; i++) void batcher.take("s", takeOf(`k${i}`));
    expect(calls.map((call) => call.takes.length)).toEqual([1, 3, 3]);
    expect(calls.every((call) => call.takes.length <= 3)).toBe(true);
  });

  it("fails every take of a failed call, and the next takes go in a call of their own", async () => {
    const { calls, send } = heldStore();
    const batcher = new ShardBatcher(send, 8, 60_000);
    const first = batcher.take("s", takeOf("a"), (work) => void work);
    const second = batcher.take("s", takeOf("b"));
    calls[0]!.fail(new Error("object exploded"));
    await expect(first).rejects.toThrow("object exploded");
    await vi.waitFor(() => expect(calls).toHaveLength(2));
    calls[1]!.fail(new Error("again"));
    await expect(second).rejects.toThrow("again");
    const third = batcher.take("s", takeOf("c"));
    calls[2]!.answer();
    expect((await third).allowed).toBe(true);
  });

  it("a send that throws fails its takes instead of throwing at the caller", async () => {
    const batcher = new ShardBatcher(
      () => {
        throw new TypeError("no such method");
      },
      8,
      60_000,
    );
    await expect(batcher.take("s", takeOf("a"))).rejects.toThrow("no such method");
  });

  it("a store answering the wrong number of decisions fails the batch", async () => {
    const batcher = new ShardBatcher(async () => [], 8, 60_000);
    await expect(batcher.take("s", takeOf("a"))).rejects.toThrow("answered 0 decisions for 1 takes");
  });

  it("a call that never answers stops holding back the takes behind it after the gate time", async () => {
    vi.useFakeTimers();
    const { calls, send } = heldStore();
    const batcher = new ShardBatcher(send, 8, 1_000);
    void batcher.take("s", takeOf("lost"));
    const behind = batcher.take("s", takeOf("behind"));
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    calls[1]!.answer();
    expect((await behind).allowed).toBe(true);
    // The lost call answering late releases nothing twice.
    calls[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    const next = batcher.take("s", takeOf("next"));
    expect(calls).toHaveLength(3);
    calls[2]!.answer();
    await next;
  });

  it("sends every call from the request leading it, never from one another request woke", async () => {
    // A request's context, as the Workers runtime keeps one per request: I/O made from another's fails.
    const request = new AsyncLocalStorage<string>();
    const { calls, send } = heldStore();
    const senders: Array<{ sender: string | undefined; carried: string[] }> = [];
    const keptAliveBy: Array<string | undefined> = [];
    const batcher = new ShardBatcher(
      (shard, takes) => {
        senders.push({ sender: request.getStore(), carried: takes.map((take) => take.id) });
        return send(shard, takes);
      },
      3,
      60_000,
    );
    // a leads alone; b and c wait; d finds a full batch waiting and leads it; e waits behind d's call, and d's
    // request sends it once its own call has ended (after its response, kept alive).
    const decided = ["a", "b", "c", "d", "e"].map((id) => request.run(id, () => batcher.take("s", takeOf(id), () => keptAliveBy.push(request.getStore()))));
    for (let answered = 0; answered < 3; answered++) {
      await vi.waitFor(() => expect(calls.length).toBeGreaterThan(answered));
      calls[answered]!.answer();
    }
    await Promise.all(decided);
    expect(senders).toEqual([
      { sender: "a", carried: ["a"] },
      { sender: "d", carried: ["d", "b", "c"] },
      { sender: "d", carried: ["e"] },
    ]);
    expect(keptAliveBy).toEqual(["d"]);
  });
});
