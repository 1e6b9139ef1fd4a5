/**
 * One isolate's calls to the store objects, batched: a take for an object with no call in flight goes at once;
 * takes arriving while one is in flight wait for it and then go together in one call (at most `maxBatch` each).
 * Under load an object call carries many requests' takes, and with no load nothing waits. Each take gets its own
 * decision; a call that fails fails each of its takes. A call that has not answered after `gateMs` no longer holds
 * back the takes behind it (they go in a call of their own), so one lost call cannot stall an object's traffic.
 */

import type { TakeRequest } from "./bucket-table.ts";
import type { LeaseDecision } from "./sliding-window.ts";

/** Sends one batch to the object named `shard` and returns its decisions, in order. */
export type SendBatch = (shard: string, takes: readonly TakeRequest[]) => Promise<readonly LeaseDecision[]>;

interface Waiting {
  readonly take: TakeRequest;
  resolve(decision: LeaseDecision): void;
  reject(error: unknown): void;
}

interface ShardQueue {
  inFlight: number;
  waiting: Waiting[];
}

export interface BatcherStats {
  /** Calls made to store objects. */
  storeCalls: number;
  /** Takes those calls carried. */
  storeTakes: number;
}

export class ShardBatcher {
  private readonly queues = new Map<string, ShardQueue>();

  constructor(
    private readonly send: SendBatch,
    private readonly maxBatch: number,
    private readonly gateMs: number,
    readonly stats: BatcherStats = { storeCalls: 0, storeTakes: 0 },
  ) {}

  /** Shards with a call in flight or takes waiting. */
  get busyShards(): number {
    return this.queues.size;
  }

  take(shard: string, take: TakeRequest): Promise<LeaseDecision> {
    let queue = this.queues.get(shard);
    if (!queue) {
      queue = { inFlight: 0, waiting: [] };
      this.queues.set(shard, queue);
    }
    const decided = new Promise<LeaseDecision>((resolve, reject) => queue.waiting.push({ take, resolve, reject }));
    // A full batch goes at once even while a call is in flight: a queue never holds more than one batch.
    if (queue.inFlight === 0 || queue.waiting.length >= this.maxBatch) this.flush(shard, queue);
    return decided;
  }

  private flush(shard: string, queue: ShardQueue): void {
    const batch = queue.waiting.splice(0, this.maxBatch);
    if (batch.length === 0) {
      if (queue.inFlight === 0) this.queues.delete(shard);
      return;
    }
    queue.inFlight++;
    let gated = true;
    const release = () => {
      if (!gated) return;
      gated = false;
      clearTimeout(timer);
      queue.inFlight--;
      this.flush(shard, queue);
    };
    const timer = setTimeout(release, this.gateMs);
    this.stats.storeCalls++;
    this.stats.storeTakes += batch.length;
    let sent: Promise<readonly LeaseDecision[]>;
    try {
      sent = this.send(
        shard,
        batch.map((waiting) => waiting.take),
      );
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent
      .then((decisions) => {
        if (decisions.length !== batch.length) throw new Error(`the store answered ${decisions.length} decisions for ${batch.length} takes`);
        for (const [index, waiting] of batch.entries()) waiting.resolve(decisions[index]!);
      })
      .catch((error: unknown) => {
        for (const waiting of batch) waiting.reject(error);
      })
      .finally(release);
  }
}
