/** What the agent's session with the edge reports: its state, and the edge's refusals. */

export type SessionState = "connecting" | "online" | "reconnecting" | "refused" | "closed";

export interface SessionStatus {
  readonly state: SessionState;
  readonly sessionId?: string;
  readonly region?: string;
  /** Round trip of the last heartbeat. */
  readonly latencyMs?: number;
  readonly connectedAt?: Date;
  /** Sessions opened after the first. */
  readonly reconnects: number;
  readonly lastError?: string;
  readonly nextAttemptAt?: Date;
}

/** The edge said no: to a connection (its HTTP answer) or to a tunnel (a tunnel_failed frame). */
export class EdgeRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = "EdgeRefusal";
  }
}
