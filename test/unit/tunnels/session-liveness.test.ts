import { describe, expect, it } from "vitest";
import { firstCheck, liveness, MISSED_HEARTBEATS } from "../../../src/tunnels/session-liveness.ts";

const HEARTBEAT = 5_000;

describe("tunnel session liveness", () => {
  it(`a session heard from within ${MISSED_HEARTBEATS} heartbeats is alive, and is checked again at its deadline`, () => {
    const state = liveness({ lastPing: 10_000, lastFrameAt: 0, connectedAt: 0, heartbeatMs: HEARTBEAT, now: 12_000 });
    expect(state).toEqual({ alive: true, checkAgainAt: 10_000 + MISSED_HEARTBEATS * HEARTBEAT + 100 });
  });

  it("the latest of ping, frame and connection counts", () => {
    const input = { lastPing: 1_000, lastFrameAt: 30_000, connectedAt: 2_000, heartbeatMs: HEARTBEAT, now: 40_000 };
    expect(liveness(input)).toMatchObject({ alive: true });
    expect(liveness({ ...input, now: 30_000 + MISSED_HEARTBEATS * HEARTBEAT + 1 })).toEqual({ alive: false });
  });

  it("a check right after a ping still waits at least one heartbeat", () => {
    const state = liveness({ lastPing: 0, lastFrameAt: 0, connectedAt: 0, heartbeatMs: HEARTBEAT, now: 14_999 });
    expect(state).toEqual({ alive: true, checkAgainAt: 14_999 + HEARTBEAT + 100 });
  });

  it("the first check of a new session is its first possible deadline", () => {
    expect(firstCheck(1_000, HEARTBEAT)).toBe(1_000 + MISSED_HEARTBEATS * HEARTBEAT + 100);
  });
});
