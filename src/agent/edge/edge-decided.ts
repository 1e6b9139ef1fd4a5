/**
 * A request the edge answered itself (an edge_decision frame), shown to the tunnel's taps as an exchange that
 * began and ended at once: the capture store, the status screen's list and the metrics see it as they see a
 * relayed one, marked `atEdge` (it has no upstream response, only the edge's status).
 */

import type { FrameOf } from "../../relay/frames.ts";
import type { ExchangeInfo, ExchangeTap } from "./exchange.ts";

export interface DecidedTunnel {
  readonly name: string;
  readonly id: string;
  readonly inspect: boolean;
  readonly taps: readonly ExchangeTap[];
}

export function showEdgeDecision(decision: FrameOf<"edge_decision">, tunnel: DecidedTunnel, sessionKey: string): void {
  const info: ExchangeInfo = {
    key: `${sessionKey}:edge:${decision.at}:${Math.random().toString(36).slice(2)}`,
    tunnelName: tunnel.name,
    tunnelId: tunnel.id,
    inspect: tunnel.inspect,
    start: new Date(decision.at),
    startNs: process.hrtime.bigint(),
    method: decision.method,
    target: decision.target,
    headers: decision.headers,
    remoteAddr: decision.client_addr,
    scheme: "https",
    rateLimits: decision.rate_limits,
    atEdge: { answeredBy: decision.answered_by, suppressed: decision.suppressed },
  };
  for (const tap of tunnel.taps) {
    const observer = tap.open(info);
    observer?.onResponseHead?.({ status: decision.status, statusText: "", headers: [], httpVersion: "1.1" });
    observer?.onClose?.({ durationNs: 0n });
  }
}
