/**
 * The last few HTTP exchanges of every tunnel, for the status screen's "HTTP Requests" list (as ngrok's
 * console shows them): a tap that keeps method, path, status and time, bounded in count and path length.
 * It sees every tunnel, `inspect: false` ones too, and works with the agent API off.
 */

import type { ExchangeTap } from "../edge/exchange.ts";

/** Exchanges kept (the screen shows as many as fit). */
export const RECENT_REQUESTS = 30;
/** Characters of a path kept: more never fits on a terminal line. */
export const RECENT_PATH_CHARS = 512;

export interface RecentRequest {
  readonly tunnelName: string;
  readonly method: string;
  readonly path: string;
  readonly start: Date;
  readonly replay: boolean;
  state: "pending" | "complete" | "failed";
  statusCode?: number;
  statusText?: string;
  /** Set when the exchange failed: the reset code (`upstream_unreachable`, …). */
  errorCode?: string;
  durationNs?: bigint;
  /** Answered at the edge by this action type (rate-limit, deny, …); never reached the local service. */
  readonly atEdge?: string;
  /** Requests like it the edge answered meanwhile, only counted (edge decisions come at a bounded rate). */
  readonly moreLikeIt?: number;
}

export class RecentRequests {
  /** Newest first. */
  private readonly entries: RecentRequest[] = [];
  private readonly listeners = new Set<() => void>();
  private closed = false;

  constructor(private readonly capacity = RECENT_REQUESTS) {}

  /** Add to every tunnel (`agent.tunnels.addTap`); it records nothing once {@link close}d. */
  readonly tap: ExchangeTap = {
    open: (info) => {
      if (this.closed) return undefined;
      const entry: RecentRequest = {
        tunnelName: info.tunnelName,
        method: info.method,
        path: info.target.length > RECENT_PATH_CHARS ? info.target.slice(0, RECENT_PATH_CHARS) : info.target,
        start: info.start,
        replay: info.replay === true,
        state: "pending",
        ...(info.atEdge ? { atEdge: info.atEdge.answeredBy.type, moreLikeIt: info.atEdge.suppressed } : {}),
      };
      this.entries.unshift(entry);
      if (this.entries.length > this.capacity) this.entries.length = this.capacity;
      this.changed();
      return {
        onResponseHead: (head) => {
          entry.statusCode = head.status;
          entry.statusText = head.statusText;
          this.changed();
        },
        onClose: (outcome) => {
          entry.durationNs = outcome.durationNs;
          entry.state = outcome.error ? "failed" : "complete";
          if (outcome.error) entry.errorCode = outcome.error.code;
          this.changed();
        },
      };
    },
  };

  /** Newest first. */
  list(): readonly RecentRequest[] {
    return this.entries;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}
