/**
 * The isolate's budget of bodies held whole in memory (a request body verify-webhook or jwt-validation reads, a
 * response body a settle reads): bytes in total and per party, taken as they are read and given back when the
 * read ends, so no number of stalled uploads takes an isolate past its memory. docs/security.md has the figures.
 */

/** The bounds of one budget; {@link BODY_BUDGET_LIMITS} are the Worker's. */
export interface BodyBudgetLimits {
  /** Bytes all reads of the isolate may hold at once. */
  readonly totalBytes: number;
  /** Bytes the reads of one party (a tunnel's account; the operator's routes) may hold at once. */
  readonly partyBytes: number;
  /**
   * Bytes the reads of one client (its address, an IPv6 client's /64) may hold at once, whatever party they are
   * for: one client stalling uploads holds at most this of a party's share, not all of it.
   */
  readonly clientBytes: number;
  /**
   * Milliseconds a read may wait for its next chunk before it is given up. A hold not renewed for three times
   * this is taken as abandoned and given back: its read can no longer be live (it would have been given up), so
   * its request ended without its code running on (a client that vanished cancels the invocation).
   */
  readonly readIdleMs: number;
  /** What a request refused for want of budget is told to wait (retry-after, seconds). */
  readonly retryAfterSeconds: number;
}

const MIB = 1024 * 1024;

/**
 * 16 MiB in all, 4 MiB per party, 1 MiB per client: with the transient copy a finished read makes (its chunks
 * joined), at most 32 MiB of an isolate's 128 MB go to held bodies, however many uploads stall. A party's 4 MiB
 * is four webhooks of the 1 MiB a read may take, or hundreds of the few KB real ones weigh; a client's 1 MiB is
 * one of the largest, so it takes four clients to fill a party's share.
 */
export const BODY_BUDGET_LIMITS: BodyBudgetLimits = {
  totalBytes: 16 * MIB,
  partyBytes: 4 * MIB,
  clientBytes: MIB,
  readIdleMs: 10_000,
  retryAfterSeconds: 2,
};

/** Characters of a client's name kept as its key (an address's text is at most 45; a forged header may be longer). */
const MAX_CLIENT_KEY_CHARS = 64;

/** Bytes one read holds of a budget. */
export interface BodyHold {
  /** Makes the hold at least `bytes`: true, or false (and the hold unchanged) when that would pass a limit. */
  cover(bytes: number): boolean;
  /** Gives every byte back; a second call does nothing. */
  release(): void;
  readonly bytes: number;
}

/** Where one exchange's reads take their bytes from: a budget, under the party its target belongs to and its client. */
export interface BodyAllowance {
  readonly budget: BodyBudget;
  readonly party: string;
  /** The client's address group (client-ip-bucket.ts); absent or empty: the client is not told apart. */
  readonly client?: string;
}

interface Held {
  readonly party: string;
  readonly client: string;
  bytes: number;
  renewedAt: number;
  released: boolean;
}

export class BodyBudget {
  private total = 0;
  private readonly parties = new Map<string, number>();
  private readonly clients = new Map<string, number>();
  /** Holds with bytes, for the sweep of abandoned ones. */
  private readonly live = new Set<Held>();
  /** Covers refused, and abandoned holds given back by the sweep. */
  readonly stats = { refused: 0, expired: 0 };

  constructor(
    readonly limits: BodyBudgetLimits = BODY_BUDGET_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Bytes held by every read of the isolate. */
  get heldBytes(): number {
    return this.total;
  }

  /** Bytes held by `party`'s reads. */
  heldBy(party: string): number {
    return this.parties.get(party) ?? 0;
  }

  /** Bytes held by reads of `client`. */
  heldByClient(client: string): number {
    return this.clients.get(client.slice(0, MAX_CLIENT_KEY_CHARS)) ?? 0;
  }

  /** A hold of no bytes yet, for one read by `party` (from `client`, when told apart). */
  hold(party: string, client = ""): BodyHold {
    const held: Held = { party, client: client.slice(0, MAX_CLIENT_KEY_CHARS), bytes: 0, renewedAt: this.now(), released: false };
    return {
      cover: (bytes) => this.cover(held, bytes),
      release: () => this.release(held),
      get bytes() {
        return held.bytes;
      },
    };
  }

  private cover(held: Held, bytes: number): boolean {
    if (held.released) return false;
    held.renewedAt = this.now();
    const more = bytes - held.bytes;
    if (more <= 0) return true;
    if (!this.fits(held, more)) {
      // Only when refusing: abandoned holds cost the busy path, never a read that fits.
      if (this.sweep() === 0 || !this.fits(held, more)) {
        this.stats.refused++;
        return false;
      }
    }
    this.total += more;
    this.parties.set(held.party, this.heldBy(held.party) + more);
    if (held.client !== "") this.clients.set(held.client, this.heldByClient(held.client) + more);
    held.bytes = bytes;
    this.live.add(held);
    return true;
  }

  private fits(held: Held, more: number): boolean {
    if (held.client !== "" && this.heldByClient(held.client) + more > this.limits.clientBytes) return false;
    return this.total + more <= this.limits.totalBytes && this.heldBy(held.party) + more <= this.limits.partyBytes;
  }

  private release(held: Held): void {
    if (held.released) return;
    held.released = true;
    if (held.bytes === 0) return;
    this.total -= held.bytes;
    const left = this.heldBy(held.party) - held.bytes;
    if (left === 0) this.parties.delete(held.party);
    else this.parties.set(held.party, left);
    if (held.client !== "") {
      const clientLeft = this.heldByClient(held.client) - held.bytes;
      if (clientLeft === 0) this.clients.delete(held.client);
      else this.clients.set(held.client, clientLeft);
    }
    this.live.delete(held);
  }

  /** Gives back the holds not renewed for three read idle times; how many. */
  private sweep(): number {
    const before = this.now() - 3 * this.limits.readIdleMs;
    let expired = 0;
    for (const held of this.live) {
      if (held.renewedAt >= before) continue;
      this.release(held);
      expired++;
    }
    this.stats.expired += expired;
    return expired;
  }
}

/** The isolate's budget and who a target's reads count against (by the target's scope), as the pipeline takes them. */
export interface IsolateBodies {
  readonly budget: BodyBudget;
  /** The party of the target whose scope is `scope` (`route:…` or `tunnel:…`). */
  partyOf(scope: string): string;
}

/** The party of every route of policies/: the operator's, one of its own. */
export const OPERATOR_PARTY = "operator";
