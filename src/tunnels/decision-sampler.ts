/**
 * At most `perSecond` edge decisions sent per key (a tunnel) and second; the rest are counted, and the count
 * rides on the next one sent ("and 9,412 more like it"). Used by the Worker before it calls a session object
 * and by the session object before it writes a frame, so a flood of 429s costs the agent a bounded rate.
 */

import { makeRoom } from "../bounded-map.ts";

/** Keys remembered at once; past it the stalest are forgotten (with their untold counts). */
export const MAX_SAMPLED_KEYS = 1024;

interface Window {
  startedAt: number;
  sent: number;
  /** Counted, not sent, since the last one sent. */
  suppressed: number;
}

export type SampleAnswer = { readonly send: true; readonly suppressed: number } | { readonly send: false };

export class DecisionSampler {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys: number = MAX_SAMPLED_KEYS,
  ) {}

  /**
   * Whether to send one more decision for `key`, and how many were counted since the last sent (the one
   * sent carries them; `alsoSuppressed` are counted by an earlier sampler and added).
   */
  offer(key: string, alsoSuppressed = 0): SampleAnswer {
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined) {
      window = { startedAt: now, sent: 0, suppressed: 0 };
      makeRoom(this.windows, this.maxKeys);
      this.windows.set(key, window);
    } else if (now - window.startedAt >= 1000 || now < window.startedAt) {
      window.startedAt = now;
      window.sent = 0;
    }
    if (window.sent >= this.perSecond) {
      window.suppressed += 1 + alsoSuppressed;
      return { send: false };
    }
    window.sent++;
    const suppressed = window.suppressed + alsoSuppressed;
    window.suppressed = 0;
    return { send: true, suppressed };
  }

  get size(): number {
    return this.windows.size;
  }
}
