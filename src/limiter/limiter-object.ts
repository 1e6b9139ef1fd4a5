/** RateLimiter: the Durable Object holding one bucket's sliding window; a thin shell over sliding-window.ts. */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { emptyWindow, expiresAt, take, type LeaseDecision, type LeaseReturn, type WindowSpec, type WindowState } from "./sliding-window.ts";

interface StoredWindow {
  state: WindowState;
  windowMs: number;
}

const STORAGE_KEY = "window";

export class RateLimiter extends DurableObject<Env> {
  private stored: StoredWindow;
  private alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.stored = ctx.storage.kv.get<StoredWindow>(STORAGE_KEY) ?? { state: emptyWindow, windowMs: 0 };
  }

  /**
   * Counts one request and, if asked, leases further admissions to the calling isolate for
   * `leaseMs` (see `take` in sliding-window.ts): one storage write serves many requests. `returned`:
   * leased admissions the isolate gives back unused. `forRequest` false: a lease asked for ahead, with no
   * request of its own. The whole decision runs without yielding, so it is atomic.
   */
  take(spec: WindowSpec, want: number, leaseMs: number, returned?: LeaseReturn, forRequest = true): LeaseDecision {
    const now = Date.now();
    const { decision, state } = take(this.stored.state, now, spec, want, leaseMs, returned, forRequest === true);
    this.stored = { state, windowMs: spec.windowMs };
    if (decision.granted > 0 || (returned && returned.count > 0)) {
      this.ctx.storage.kv.put(STORAGE_KEY, this.stored);
      this.scheduleCleanup();
    }
    return decision;
  }

  /** Idle buckets delete themselves once every admission has left the window. */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const expiry = expiresAt(this.stored.state, this.stored.windowMs);
    if (expiry === undefined || expiry <= Date.now()) {
      this.stored = { state: emptyWindow, windowMs: 0 };
      await this.ctx.storage.deleteAll();
      return;
    }
    this.scheduleCleanup();
  }

  private scheduleCleanup(): void {
    const expiry = expiresAt(this.stored.state, this.stored.windowMs);
    if (expiry === undefined || this.alarmAt !== null) return;
    this.alarmAt = expiry;
    void this.ctx.storage.setAlarm(expiry);
  }
}
