/**
 * Which store objects this isolate has a call out on, and the takes of requests waiting to ride the next one. A
 * request whose object already has a call out does not send its own: it leaves its take here, and the request
 * that sends the object's next call carries every take waiting (up to `maxCarried`), whichever of the object's
 * buckets they are for, in the order they came, and writes each answer into its ticket. A burst of one client's
 * requests (a page firing fifteen calls at once), or the first requests of many clients whose buckets share an
 * object, then cost that object a few calls instead of one each; the object decides a call's takes one after
 * another, exactly as it would decide them sent one by one.
 *
 * Only plain data passes between requests here, never a promise: the Workers runtime ties the continuations of
 * a promise to the request whose I/O settled it, and a request woken by another's answer failed its own I/O
 * (docs/rate-limits.md). So a waiting request looks at its ticket on its own timer (`sleepMs`).
 *
 * A request can go away mid-call and never write its riders' answers. Its call stops counting as out after
 * `staleAfterMs`, and every take it carried or left waiting is then sent by its own request: a take may so be
 * counted twice (fewer admitted, never more), but no request goes uncounted because another's client left. The
 * clock is passed in.
 */

import { freeBudget } from "../bounded-map.ts";

/** What became of a carried take: its answer, or why the call failed. */
export type TicketOutcome<A> = { readonly answer: A } | { readonly error: Error };

export interface Ticket<T, A> {
  readonly take: T;
  /** When the take was made (the call carrying it is decided no earlier). */
  readonly sent: number;
  /** When its request last looked at it (a request that stopped looking has gone, and its take is dropped). */
  seen: number;
  /** Set by the request that carried it, once its call answered or failed. */
  outcome?: TicketOutcome<A>;
  /** When a call took it along (it must not be sent again while that call may answer); undefined while it waits. */
  carriedAt?: number;
  /** The waiting list it is in, until a call takes it or it stops waiting. */
  waitingIn?: Ticket<T, A>[];
  /** Looks at it since its call was due (each sleeps twice as long as the one before). */
  lateLooks: number;
}

interface Key<T, A> {
  /** When the call out on the key was sent; undefined when none is out (takes may still wait for the next). */
  callSince: number | undefined;
  /** Which call that is, so that a call gone stale cannot end its successor. */
  call: number;
  readonly waiting: Ticket<T, A>[];
}

/** Most takes one call to a store object may carry (the object refuses more; the gateway's calls stay within it). */
export const MAX_TAKES_PER_CALL = 256;
/** Keys (store objects) with a call out or takes waiting, per isolate: beyond it the oldest are forgotten (their waiters move to the next). */
export const MAX_KEYS_IN_FLIGHT = 4096;
/** Takes that may wait on one key: a request beyond them sends its take alone, as if no call were out. */
export const MAX_WAITING_PER_KEY = 1024;
/** Takes that may wait in one isolate, all keys together: beyond them a request sends its take alone. */
export const MAX_WAITING_PER_ISOLATE = 16_384;
/**
 * A waiting request's first look comes this many average call lengths after its call went out: a look that finds
 * the call still out costs a timer for nothing, and calls vary (docs/rate-limits.md has the figures).
 */
const FIRST_LOOK_CALLS = 1.5;
/** Longest sleep between looks once a call is overdue: a waiting request's looks are most of what it costs. */
const MAX_LOOK_INTERVAL_MS = 64;

/** Whether `ticket`'s request has gone: it has not looked at it for two call time limits (a live one looks at least once a limit). */
function gone(ticket: Ticket<unknown, unknown>, now: number, staleAfterMs: number): boolean {
  return now - ticket.seen > 2 * staleAfterMs;
}

export class CallsInFlight<T, A> {
  private readonly keys = new Map<string, Key<T, A>>();
  private calls = 0;
  private waitingTotal = 0;
  /** When takes of gone requests were last swept out (see `hasRoom`). */
  private sweptAt = Number.NEGATIVE_INFINITY;
  /** How long calls have lately taken, ms (a moving average, quick to fall): a waiting request sleeps until its call is due. */
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

  /** Keys with a call out or takes waiting right now (stale ones included until looked at). */
  get size(): number {
    return this.keys.size;
  }

  /** Takes waiting right now, all keys together. */
  get waiting(): number {
    return this.waitingTotal;
  }

  /** Whether `id` has a call out from this isolate (one that has not gone stale). */
  isOut(id: string, staleAfterMs: number): boolean {
    const key = this.keys.get(id);
    return key !== undefined && this.callOut(key, staleAfterMs);
  }

  /** Whether a new take on `id` can wait for the call out on it (else its request sends it alone, or sends the call). */
  canWait(id: string, staleAfterMs: number): boolean {
    const key = this.keys.get(id);
    return key !== undefined && this.callOut(key, staleAfterMs) && this.hasRoom(key, staleAfterMs);
  }

  /** Leaves `take` to be carried by the key's next call (`canWait` must have said yes); the caller then polls `settled`. */
  wait(id: string, take: T, sent: number): Ticket<T, A> {
    const ticket: Ticket<T, A> = { take, sent, seen: this.now(), lateLooks: 0 };
    const key = this.keys.get(id);
    if (key) this.enqueue(key, ticket);
    return ticket;
  }

  /**
   * Whether `ticket`'s wait is over: it has an outcome, or its request is to send it itself (calling `send`
   * first, so that the takes still waiting ride along): no call is out on `id` and none carries it, or the call
   * that carried it went stale (its request went away: the take may have been counted, and is sent again).
   */
  settled(id: string, ticket: Ticket<T, A>, staleAfterMs: number): boolean {
    if (ticket.outcome) return true;
    if (ticket.carriedAt !== undefined) return this.now() - ticket.carriedAt > staleAfterMs;
    ticket.seen = this.now();
    const key = this.keys.get(id);
    if (key === undefined || !this.callOut(key, staleAfterMs)) {
      this.abandon(ticket);
      if (key?.waiting.length === 0) this.keys.delete(id);
      return true;
    }
    // Its key was forgotten (too many in flight) and is out again: it waits for that call instead, room allowing
    // (else its request sends it alone).
    if (ticket.waitingIn !== key.waiting) {
      this.abandon(ticket);
      if (!this.hasRoom(key, staleAfterMs)) return true;
      this.enqueue(key, ticket);
    }
    return false;
  }

  /** Stops waiting (a timeout, or the request sends it itself): a take not yet carried is taken out. */
  abandon(ticket: Ticket<T, A>): void {
    const list = ticket.waitingIn;
    if (list === undefined) return;
    ticket.waitingIn = undefined;
    const at = list.indexOf(ticket);
    if (at < 0) return;
    list.splice(at, 1);
    this.waitingTotal--;
  }

  /**
   * A call on `id` goes out now: returns its number and the waiting tickets it carries (oldest first, at most
   * `maxCarried`); those beyond stay waiting for the next call. Takes whose requests have not looked at them for
   * two call time limits are dropped, not carried: those requests have gone (a live one looks at least once a
   * time limit, and one that was wrongly dropped waits again when it next looks). `end` must follow.
   */
  send(id: string, staleAfterMs: number): { call: number; carried: Ticket<T, A>[] } {
    const now = this.now();
    let key = this.keys.get(id);
    if (key) {
      // Most recently used last, so the first entry is the one to forget.
      this.keys.delete(id);
    } else {
      freeBudget(
        this.keys,
        1,
        MAX_KEYS_IN_FLIGHT,
        () => this.keys.size,
        (key) => this.forget(key),
      );
      key = { callSince: undefined, call: 0, waiting: [] };
    }
    key.callSince = now;
    key.call = ++this.calls;
    this.keys.set(id, key);
    const carried: Ticket<T, A>[] = [];
    this.board(key, now, staleAfterMs, carried);
    return { call: key.call, carried };
  }

  /**
   * Call `call` on `id`, sent but not yet on its way (its request let the isolate's other ready work run first), also
   * carries the takes that came meanwhile, up to the bound: they join `carried`. The call and every take it carries
   * count as sent now, as its time limit starts now: a turn that ran long must not make its riders send their takes
   * again while it may still answer. Nothing when the call went stale.
   */
  collect(id: string, call: number, staleAfterMs: number, carried: Ticket<T, A>[]): void {
    const key = this.keys.get(id);
    if (key?.call !== call || !this.callOut(key, staleAfterMs)) return;
    const now = this.now();
    key.callSince = now;
    for (const ticket of carried) ticket.carriedAt = now;
    this.board(key, now, staleAfterMs, carried);
  }

  /**
   * How long a request waiting on `ticket` should sleep before it looks again: until the call it waits for (the
   * one carrying it, or the one out now) is due by how long calls have lately taken (FIRST_LOOK_CALLS of them);
   * then a quarter of one, doubling with every look that finds it still out (at most MAX_LOOK_INTERVAL_MS).
   */
  sleepMs(id: string, ticket: Ticket<T, A>): number {
    const since = ticket.carriedAt ?? this.keys.get(id)?.callSince;
    const due = since === undefined ? 0 : since + FIRST_LOOK_CALLS * this.callMs - this.now();
    if (due >= 1) return Math.ceil(due);
    const interval = Math.max(1, Math.round(this.callMs / 4)) * 2 ** Math.min(ticket.lateLooks++, 6);
    return Math.min(MAX_LOOK_INTERVAL_MS, interval);
  }

  /**
   * Call `call` answered or failed, and its carried tickets have their outcomes (any without one gets an error).
   * Takes still waiting (they came after it went out) find no call out, and the first to look sends the next.
   */
  end(id: string, call: number, carried: readonly Ticket<T, A>[]): void {
    for (const ticket of carried) ticket.outcome ??= { error: new Error("the call carrying this take ended without its answer") };
    const key = this.keys.get(id);
    if (!key || key.call !== call) return;
    if (key.callSince !== undefined) {
      // Down fast, up slowly: after a slow spell, riders would otherwise sleep its call length for dozens of fast calls.
      const took = this.now() - key.callSince;
      this.callMs += (took - this.callMs) / (took < this.callMs ? 2 : 8);
    }
    key.callSince = undefined;
    if (key.waiting.length === 0) this.keys.delete(id);
  }

  /** Forgets a key: its waiting takes find no list, and move to the key's next call or send their own. */
  private forget(id: string): void {
    const key = this.keys.get(id);
    if (!key) return;
    for (const ticket of key.waiting) ticket.waitingIn = undefined;
    this.waitingTotal -= key.waiting.length;
    this.keys.delete(id);
  }

  /**
   * Whether `key` can take one more waiting take. At the isolate's bound, takes whose requests stopped looking
   * (gone) are swept out first, at most once a time limit, so dead ones cannot keep batching off for good.
   */
  private hasRoom(key: Key<T, A>, staleAfterMs: number): boolean {
    if (key.waiting.length >= MAX_WAITING_PER_KEY) return false;
    if (this.waitingTotal < MAX_WAITING_PER_ISOLATE) return true;
    const now = this.now();
    if (now - this.sweptAt < staleAfterMs) return false;
    this.sweptAt = now;
    for (const [id, other] of this.keys) {
      let kept = 0;
      for (const ticket of other.waiting) {
        if (gone(ticket, now, staleAfterMs)) ticket.waitingIn = undefined;
        else other.waiting[kept++] = ticket;
      }
      this.waitingTotal -= other.waiting.length - kept;
      other.waiting.length = kept;
      if (other.waiting.length === 0 && other.callSince === undefined) this.keys.delete(id);
    }
    return this.waitingTotal < MAX_WAITING_PER_ISOLATE;
  }

  /** Moves `key`'s waiting takes into `carried`, oldest first, up to the bound; those of gone requests are dropped. */
  private board(key: Key<T, A>, now: number, staleAfterMs: number, carried: Ticket<T, A>[]): void {
    while (carried.length < this.maxCarried && key.waiting.length > 0) {
      const ticket = key.waiting.shift()!;
      this.waitingTotal--;
      ticket.waitingIn = undefined;
      if (gone(ticket, now, staleAfterMs)) continue;
      ticket.carriedAt = now;
      ticket.lateLooks = 0;
      carried.push(ticket);
    }
  }

  private enqueue(key: Key<T, A>, ticket: Ticket<T, A>): void {
    key.waiting.push(ticket);
    ticket.waitingIn = key.waiting;
    this.waitingTotal++;
  }

  private callOut(key: Key<T, A>, staleAfterMs: number): boolean {
    if (key.callSince === undefined) return false;
    if (this.now() - key.callSince <= staleAfterMs) return true;
    key.callSince = undefined;
    return false;
  }
}
