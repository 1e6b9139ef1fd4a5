/**
 * One isolate's calls to the store objects, batched: a take for an object with no call in flight goes at once;
 * takes arriving while one is in flight wait for it and then go together in one call (at most `maxBatch`). Under
 * load an object call carries many requests' takes, and with no load nothing waits. Each take gets its own
 * decision; a call that fails fails each of its takes.
 *
 * Every call is made by a request whose own take is in it (the batch's leader), and waited for by that request:
 * the Workers runtime cancels the I/O a request started once that request has answered, so a call sent on behalf
 * of other requests alone could be lost. When a call ends, the leader hands the lead to the first take waiting,
 * which sends the next batch from its own request. A take that has waited `gateMs` for a call that does not end
 * leads a batch itself, so one lost call cannot stall an object's traffic.
 */

import type { TakeRequest } from "./bucket-table.ts";
import type { LeaseDecision } from "./sliding-window.ts";

/** Sends one batch to the object named `shard` and returns its decisions, in order. */
export type SendBatch = (shard: string, takes: readonly TakeRequest[]) => Promise<readonly LeaseDecision[]>;

type Outcome = { readonly decision: LeaseDecision } | { readonly error: unknown } | { readonly lead: true };

interface Waiting {
  readonly take: TakeRequest;
  settle(outcome: Outcome): void;
}

/** A call in flight; `live` until it ends or takes behind it stop waiting for it. */
interface Flight {
  live: boolean;
}

interface ShardQueue {
  readonly flights: Set<Flight>;
  readonly waiting: Waiting[];
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

  async take(shard: string, take: TakeRequest): Promise<LeaseDecision> {
    let queue = this.queues.get(shard);
    if (!queue) {
      queue = { flights: new Set(), waiting: [] };
      this.queues.set(shard, queue);
    }
    // A full batch goes at once even while a call is in flight.
    if (queue.flights.size === 0 || queue.waiting.length >= this.maxBatch - 1) return this.lead(shard, queue, take);
    const outcome = await this.wait(queue, take);
    if ("decision" in outcome) return outcome.decision;
    if ("error" in outcome) throw outcome.error;
    return this.lead(shard, queue, take);
  }

  /** Waits in the queue until a call carrying this take answers, or this take is handed the lead. */
  private wait(queue: ShardQueue, take: TakeRequest): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiting: Waiting = {
        take,
        settle: (outcome) => {
          if (timer !== undefined) clearTimeout(timer);
          resolve(outcome);
        },
      };
      queue.waiting.push(waiting);
      timer = setTimeout(() => {
        const index = queue.waiting.indexOf(waiting);
        if (index < 0) return;
        // The calls in flight have not ended within the gate: stop waiting for them.
        queue.waiting.splice(index, 1);
        for (const flight of queue.flights) flight.live = false;
        queue.flights.clear();
        resolve({ lead: true });
      }, this.gateMs);
    });
  }

  /** Sends `own` and the takes waiting (up to a batch) in one call made by this request, and waits for it. */
  private async lead(shard: string, queue: ShardQueue, own: TakeRequest): Promise<LeaseDecision> {
    const followers = queue.waiting.splice(0, this.maxBatch - 1);
    const flight: Flight = { live: true };
    queue.flights.add(flight);
    this.stats.storeCalls++;
    this.stats.storeTakes += 1 + followers.length;
    try {
      const decisions = await this.send(shard, [own, ...followers.map((waiting) => waiting.take)]);
      if (decisions.length !== followers.length + 1) throw new Error(`the store answered ${decisions.length} decisions for ${followers.length + 1} takes`);
      for (const [index, waiting] of followers.entries()) waiting.settle({ decision: decisions[index + 1]! });
      return decisions[0]!;
    } catch (error) {
      for (const waiting of followers) waiting.settle({ error });
      throw error;
    } finally {
      if (flight.live) {
        flight.live = false;
        queue.flights.delete(flight);
      }
      this.handOff(shard, queue);
    }
  }

  /** With no call in flight, the first take waiting leads the next batch; an idle queue is dropped. */
  private handOff(shard: string, queue: ShardQueue): void {
    if (queue.flights.size > 0) return;
    const next = queue.waiting.shift();
    if (next) next.settle({ lead: true });
    else if (this.queues.get(shard) === queue) this.queues.delete(shard);
  }
}
