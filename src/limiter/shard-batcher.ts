/**
 * One isolate's calls to the store objects, batched: a take for an object with no call in flight goes at once;
 * takes arriving while one is in flight wait for it and then go together in one call (at most `maxBatch`). Under
 * load an object call carries many requests' takes, and with no load nothing waits. Each take gets its own
 * decision; a call that fails fails each of its takes.
 *
 * Every call is made from the request that leads it, never from a request woken by another one: the Workers
 * runtime ties a request's I/O to that request (a call made by a continuation another request resumed fails with
 * "Cannot perform I/O on behalf of a different request"), and cancels it once the request is over. So the leader
 * is a request whose own take is in the call, or the request whose call just ended, which sends what waits next
 * after its response (`keepAlive`, the request's waitUntil), up to DRAIN_CALLS calls. A take still waiting after
 * `gateMs` (no call in flight ended, or nobody could send) leads a call itself, from its own timer.
 */

import type { TakeRequest } from "./bucket-table.ts";
import type { LeaseDecision } from "./sliding-window.ts";

/** Sends one batch to the object named `shard` and returns its decisions, in order. */
export type SendBatch = (shard: string, takes: readonly TakeRequest[]) => Promise<readonly LeaseDecision[]>;

type Outcome = { readonly decision: LeaseDecision } | { readonly error: unknown } | { readonly lead: true };

/** Keeps the request that made a call alive after its response until `work` ends (its waitUntil). */
export type KeepAlive = (work: Promise<unknown>) => void;

/** Calls a request whose call ended may send after its response for the takes waiting behind it. */
const DRAIN_CALLS = 8;

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

  async take(shard: string, take: TakeRequest, keepAlive?: KeepAlive): Promise<LeaseDecision> {
    let queue = this.queues.get(shard);
    if (!queue) {
      queue = { flights: new Set(), waiting: [] };
      this.queues.set(shard, queue);
    }
    // A full batch goes at once even while a call is in flight.
    if (queue.flights.size === 0 || queue.waiting.length >= this.maxBatch - 1) return this.lead(shard, queue, take, keepAlive);
    const outcome = await this.wait(queue, take);
    if ("decision" in outcome) return outcome.decision;
    if ("error" in outcome) throw outcome.error;
    return this.lead(shard, queue, take, keepAlive);
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
  private async lead(shard: string, queue: ShardQueue, own: TakeRequest, keepAlive: KeepAlive | undefined): Promise<LeaseDecision> {
    const followers = queue.waiting.splice(0, this.maxBatch - 1);
    const decisions = await this.call(shard, queue, [own, ...followers.map((waiting) => waiting.take)], followers, keepAlive, DRAIN_CALLS);
    return decisions[0]!;
  }

  /**
   * One call carrying `takes` (the last `followers.length` of them are the followers'); settles the followers.
   * When it ends with takes waiting and no call in flight, this request sends them next, after its response.
   */
  private async call(
    shard: string,
    queue: ShardQueue,
    takes: TakeRequest[],
    followers: readonly Waiting[],
    keepAlive: KeepAlive | undefined,
    drains: number,
  ): Promise<readonly LeaseDecision[]> {
    const flight: Flight = { live: true };
    queue.flights.add(flight);
    this.stats.storeCalls++;
    this.stats.storeTakes += takes.length;
    const first = takes.length - followers.length;
    try {
      const decisions = await this.send(shard, takes);
      if (decisions.length !== takes.length) throw new Error(`the store answered ${decisions.length} decisions for ${takes.length} takes`);
      for (const [index, waiting] of followers.entries()) waiting.settle({ decision: decisions[first + index]! });
      return decisions;
    } catch (error) {
      for (const waiting of followers) waiting.settle({ error });
      throw error;
    } finally {
      if (flight.live) {
        flight.live = false;
        queue.flights.delete(flight);
      }
      if (queue.flights.size === 0 && queue.waiting.length > 0 && keepAlive && drains > 0) {
        const next = queue.waiting.splice(0, this.maxBatch);
        keepAlive(
          this.call(
            shard,
            queue,
            next.map((waiting) => waiting.take),
            next,
            keepAlive,
            drains - 1,
          ).catch(() => undefined),
        );
      } else if (queue.flights.size === 0 && queue.waiting.length === 0 && this.queues.get(shard) === queue) this.queues.delete(shard);
    }
  }
}
