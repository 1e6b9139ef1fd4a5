/** Reconnect delays: exponential from `initialMs` to `maxMs`, with jitter so many agents do not return at once. */

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
  readonly factor?: number;
  /** Fraction of the delay taken off at random (0 … 1). */
  readonly jitter?: number;
  readonly random?: () => number;
}

/** Delay before reconnect attempt `attempt` (1 = the first retry). */
export function backoffDelay(
  attempt: number,
  { initialMs = 500, maxMs = 30_000, factor = 2, jitter = 0.2, random = Math.random }: BackoffOptions = {},
): number {
  const base = Math.min(maxMs, initialMs * factor ** Math.max(0, attempt - 1));
  return Math.round(base * (1 - jitter * random()));
}
