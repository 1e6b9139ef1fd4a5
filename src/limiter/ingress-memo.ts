/**
 * One isolate's memory of which ingress instance it serves (the data center; see src/ingress.ts). Reading it
 * from a request means materialising `request.cf`, the costliest step of a rejected request; an isolate runs in
 * one data center, so it is read again only once per `ttlMs`.
 */

/** How long an isolate trusts the ingress it last read. */
export const INGRESS_MEMO_MS = 1000;

export interface IngressMemoOptions {
  readonly now?: () => number;
  readonly ttlMs?: number;
}

export class IngressMemo {
  private readonly now: () => number;
  private readonly ttlMs: number;
  private ingress = "";
  private until = 0;

  constructor({ now = Date.now, ttlMs = INGRESS_MEMO_MS }: IngressMemoOptions = {}) {
    this.now = now;
    this.ttlMs = ttlMs;
  }

  /** The ingress remembered, or what `read` answers once the memory is older than `ttlMs`. */
  of(read: () => string): string {
    const now = this.now();
    if (now < this.until) return this.ingress;
    this.ingress = read();
    this.until = now + this.ttlMs;
    return this.ingress;
  }
}
