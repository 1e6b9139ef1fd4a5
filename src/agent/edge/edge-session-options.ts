/** What an agent's session with the edge is told to connect with, and the callbacks it reports to. */

import type { FrameOf, StreamFrame } from "../../relay/frames.ts";
import type { BackoffOptions } from "./backoff.ts";

export interface EdgeSessionOptions {
  readonly serverAddr: string;
  readonly apiKey: string;
  readonly agentVersion: string;
  readonly metadata?: string;
  readonly backoff?: BackoffOptions;
  /** How long to wait for the edge to answer hello, start or stop (default 15 s). */
  readonly requestTimeoutMs?: number;
  /** How long close() waits for the connection to end before cutting it (default 2 s). */
  readonly closeTimeoutMs?: number;
  onStreamFrame(frame: StreamFrame): void;
  /** The frames of one message have all been handed over. */
  onBatchEnd?(): void;
  /** The connection is gone: streams in flight cannot finish. */
  onDisconnect(reason: string): void;
  /** The edge took a tunnel offline on its own. */
  onTunnelStopped?(tunnelId: string, reason: string): void;
  /** Where the session's own lines go (stream frames it could not decode, at a bounded rate); default console.warn. */
  log?(line: string): void;
  /** A request to one of the session's tunnels that the edge answered itself (sampled at the edge). */
  onEdgeDecision?(decision: FrameOf<"edge_decision">): void;
}
