/**
 * Which buckets this isolate has a call out on, and the takes of requests waiting to ride the next one. A
 * request whose bucket already has a call out does not send its own: it leaves its take here, and the request
 * that sends the bucket's next call carries every take waiting (up to `maxCarried`) in that one call, in the
 * order they came, and writes each answer into its ticket. A burst of one client's requests (a page firing
 * fifteen calls at once, a flood) then costs its bucket's object two calls instead of fifteen; the object decides
 * a call's takes one after another, exactly as it would decide them sent one by one.
 *
 * Only plain data passes between requests here, never a promise: the Workers runtime ties the continuations of
 * a promise to the request whose I/O settled it, and a request woken by another's answer failed its own I/O
 * (docs/rate-limits.md). So a waiting request looks at its ticket on its own timer (`pollDelay`).
 *
 * A call whose request went away without ending it (a client gone mid-call cancels that request's code) stops
 * counting as out after `staleAfterMs`: its waiters then send their own. The clock is passed in.
 */

import { makeRoom } from "../bounded-map.ts";

/** What became of a carried take: its answer, or why the call failed. */
export type TicketOutcome<A> = { readonly answer: A } | { readonly error: Error };

export interface Ticket<T, A> {
  readonly take: T;
  /** When the take was made (the call carrying it is decided no earlier). */
  readonly sent: number;
  /** Set by the request that carried it, once its call answered or failed. */
  outcome?: TicketOutcome<A>;
  /** When a call took it along (it must not be sent again); undefined while it waits. */
  carriedAt?: number;
  /** The waiting list it is in, until a call takes it or it stops waiting. */
  waitingIn?: Ticket<T, A>[];
}

interface Bucket<T, A> {
  /** When the call out on the bucket was sent; undefined when none is out (takes may still wait for the next). */
  callSince: number | undefined;
  /** Which call that is, so that a call gone stale cannot end its successor. */
  call: number;
  readonly waiting: Ticket<T, A>[];
}

/** Most takes one call to a store object may carry (the object refuses more; the gateway's calls stay within it). */
export const MAX_TAKES_PER_CALL = 256;
/** Buckets with a call out or takes waiting, per isolate: beyond it the oldest are forgotten (their waiters send their own). */
export const MAX_BUCKETS_IN_FLIGHT = 4096;
/** Takes that may wait on one bucket: a request beyond them sends its own call, as if none were out. */
export const MAX_WAITING_PER_BUCKET = 1024;

/** Longest a waiting request sleeps between looks at its ticket once its call is due. */
const MAX_LOOK_INTERVAL_MS = 4;

export class CallsInFlight<T, A> {
  private readonly buckets = new Map<string, Bucket<T, A>>();
  private calls = 0;
  /** How long calls have lately taken, ms (a moving average): a waiting request sleeps until its call is due. */
  private callMs = 2;

  /**
   * `staleAfterMs` in the methods below: after this long a call that was never ended no longer counts as out
   * (the gateway's per-call time limit).
   */
  constructor(
    private readonly now: () => number,
    /** Takes one call carries besides its sender's own. */
    private readonly maxCarried = MAX_TAKES_PER_CALL - 1,
  ) {}

  /** Buckets with a call out or takes waiting right now (stale ones included until looked at). */
  get size(): number {
    return this.buckets.size;
  }

  /** Whether `id` has a call out that a new take can wait for. */
  canWait(id: string, staleAfterMs: number): boolean {
    const bucket = this.buckets.get(id);
    return bucket !== undefined && this.callOut(bucket, staleAfterMs) && bucket.waiting.length < MAX_WAITING_PER_BUCKET;
  }

  /** Leaves `take` to be carried by the bucket's next call (`canWait` must have said yes); the caller then polls `settled`. */
  wait(id: string, take: T, sent: number): Ticket<T, A> {
    const ticket: Ticket<T, A> = { take, sent };
    const bucket = this.buckets.get(id);
    if (bucket) {
      bucket.waiting.push(ticket);
      ticket.waitingIn = bucket.waiting;
    }
    return ticket;
  }

  /**
   * Whether `ticket`'s wait is over: it has an outcome, or no call is out on `id` and none carries it. In the
   * second case it is no longer waiting, and its request sends it itself (calling `send` first, so that the
   * takes still waiting ride along).
   */
  settled(id: string, ticket: Ticket<T, A>, staleAfterMs: number): boolean {
    if (ticket.outcome) return true;
    if (ticket.carriedAt !== undefined) {
      if (this.now() - ticket.carriedAt <= staleAfterMs) return false;
      // Carried by a request that went away: nobody will answer it, and the object may or may not have counted it.
      ticket.outcome = { error: new Error("the request carrying this take went away before its call answered") };
      return true;
    }
    const bucket = this.buckets.get(id);
    if (bucket !== undefined && this.callOut(bucket, staleAfterMs) && ticket.waitingIn === bucket.waiting) return false;
    this.abandon(id, ticket);
    return true;
  }

  /** Stops waiting (a timeout, or the request sends it itself): a take not yet carried is taken out. */
  abandon(id: string, ticket: Ticket<T, A>): void {
    const list = ticket.waitingIn;
    ticket.waitingIn = undefined;
    if (list === undefined || ticket.carriedAt !== undefined) return;
    const at = list.indexOf(ticket);
    if (at >= 0) list.splice(at, 1);
    const bucket = this.buckets.get(id);
    if (bucket?.waiting === list && bucket.callSince === undefined && bucket.waiting.length === 0) this.buckets.delete(id);
  }

  /**
   * A call on `id` goes out now: returns its number and the waiting tickets it carries (oldest first, at most
   * `maxCarried`). Those beyond stay waiting for the next call. `end` must follow, whatever the call's fate.
   */
  send(id: string): { call: number; carried: Ticket<T, A>[] } {
    const now = this.now();
    let bucket = this.buckets.get(id);
    if (bucket) {
      // Most recently used last, so the first entry is the one to forget.
      this.buckets.delete(id);
    } else {
      makeRoom(this.buckets, MAX_BUCKETS_IN_FLIGHT);
      bucket = { callSince: undefined, call: 0, waiting: [] };
    }
    bucket.callSince = now;
    bucket.call = ++this.calls;
    this.buckets.set(id, bucket);
    const carried = bucket.waiting.splice(0, this.maxCarried);
    for (const ticket of carried) {
      ticket.carriedAt = now;
      ticket.waitingIn = undefined;
    }
    return { call: bucket.call, carried };
  }

  /**
   * How long a request waiting on `ticket` should sleep before it looks again: until the call it waits for (the
   * one carrying it, or the one out now) is due by how long calls have lately taken, then a quarter of that
   * (1 to MAX_LOOK_INTERVAL_MS ms). A look is a timer firing in the request, which is most of what waiting costs.
   */
  sleepMs(id: string, ticket: Ticket<T, A>): number {
    const since = ticket.carriedAt ?? this.buckets.get(id)?.callSince;
    const due = since === undefined ? 0 : since + this.callMs - this.now();
    const interval = Math.min(MAX_LOOK_INTERVAL_MS, Math.max(1, Math.round(this.callMs / 4)));
    return Math.max(interval, Math.ceil(due));
  }

  /**
   * Call `call` answered or failed, and its carried tickets have their outcomes (any without one gets an error).
   * Takes still waiting (they came after it went out) find no call out, and the first to look sends the next.
   */
  end(id: string, call: number, carried: readonly Ticket<T, A>[]): void {
    for (const ticket of carried) ticket.outcome ??= { error: new Error("the call carrying this take ended without its answer") };
    const bucket = this.buckets.get(id);
    if (!bucket || bucket.call !== call) return;
    if (bucket.callSince !== undefined) this.callMs += (this.now() - bucket.callSince - this.callMs) / 8;
    bucket.callSince = undefined;
    if (bucket.waiting.length === 0) this.buckets.delete(id);
  }

  private callOut(bucket: Bucket<T, A>, staleAfterMs: number): boolean {
    if (bucket.callSince === undefined) return false;
    if (this.now() - bucket.callSince <= staleAfterMs) return true;
    bucket.callSince = undefined;
    return false;
  }
}
