/** When a tunnel session is dead, and when to look again: plain values, the clock passed in. */

/** A session is dead after this many heartbeat intervals without a ping or frame. */
export const MISSED_HEARTBEATS = 3;
/** Registry leases outlast one missed liveness check (they matter only when the edge itself died). */
export const LEASE_HEARTBEATS = MISSED_HEARTBEATS * 2;
const ALARM_SLACK_MS = 100;

export interface LivenessInput {
  /** The last heartbeat the runtime answered for us (0 when none). */
  readonly lastPing: number;
  readonly lastFrameAt: number;
  readonly connectedAt: number;
  readonly heartbeatMs: number;
  readonly now: number;
}

export type Liveness = { readonly alive: false } | { readonly alive: true; readonly checkAgainAt: number };

/**
 * Alive while the agent was heard from within MISSED_HEARTBEATS intervals. The next check is when it would
 * be dead if nothing came meanwhile: a silent agent is found right at its deadline, and a healthy session
 * leaves the object idle long enough to hibernate.
 */
export function liveness({ lastPing, lastFrameAt, connectedAt, heartbeatMs, now }: LivenessInput): Liveness {
  const deadline = Math.max(lastPing, lastFrameAt, connectedAt) + heartbeatMs * MISSED_HEARTBEATS;
  if (now > deadline) return { alive: false };
  return { alive: true, checkAgainAt: Math.max(deadline, now + heartbeatMs) + ALARM_SLACK_MS };
}

/** The first check of a new session. */
export function firstCheck(connectedAt: number, heartbeatMs: number): number {
  return connectedAt + heartbeatMs * MISSED_HEARTBEATS + ALARM_SLACK_MS;
}
