import { describe, expect, it } from "vitest";
import { admit, closedCircuit, record, view, type BreakerSpec, type BreakerState } from "../../../src/breaker/circuit.ts";

const spec: BreakerSpec = { trippedMs: 10_000, rollingWindowMs: 10_000, numBuckets: 10, volumeThreshold: 4, errorThresholdPercentage: 0.5 };

function outcomes(state: BreakerState, now: number, errors: boolean[]): BreakerState {
  for (const error of errors) state = record(state, now, spec, { error, probe: false });
  return state;
}

describe("circuit breaker", () => {
  it("stays closed below the volume threshold, however many errors", () => {
    const state = outcomes(closedCircuit, 1_000, [true, true, true]);
    expect(state.status).toBe("closed");
    expect(view(state, 1_000, spec)).toMatchObject({ requests: 3, errors: 3 });
  });

  it("trips on the outcome that brings the window to the volume with the error share at the threshold", () => {
    const state = outcomes(closedCircuit, 1_000, [false, true, false]);
    expect(state.status).toBe("closed");
    const tripped = record(state, 1_500, spec, { error: true, probe: false });
    expect(tripped).toMatchObject({ status: "open", openedAt: 1_500 });
  });

  it("stays closed when the error share is below the threshold", () => {
    const state = outcomes(closedCircuit, 1_000, [false, false, true, false, false, true, false]);
    expect(state.status).toBe("closed");
  });

  it("forgets outcomes that left the rolling window", () => {
    let state = outcomes(closedCircuit, 0, [true, true, true]);
    state = record(state, 10_500, spec, { error: true, probe: false });
    expect(state.status).toBe("closed");
    expect(view(state, 10_500, spec)).toMatchObject({ requests: 1, errors: 1 });
  });

  it("rejects while open, with the time until a probe may pass", () => {
    const open = outcomes(closedCircuit, 1_000, [true, true, true, true]);
    const { admission } = admit(open, 4_000, spec);
    expect(admission).toEqual({ allowed: false, probe: false, retryAfterMs: 7_000 });
  });

  it("after tripped_duration lets exactly one probe through", () => {
    const open = outcomes(closedCircuit, 1_000, [true, true, true, true]);
    const first = admit(open, 11_000, spec);
    expect(first.admission).toMatchObject({ allowed: true, probe: true });
    expect(first.state.status).toBe("half_open");
    const second = admit(first.state, 11_001, spec);
    expect(second.admission.allowed).toBe(false);
  });

  it("a successful probe closes the circuit with an empty window; a failed one opens it again", () => {
    const open = outcomes(closedCircuit, 1_000, [true, true, true, true]);
    const halfOpen = admit(open, 11_000, spec).state;
    expect(record(halfOpen, 11_200, spec, { error: false, probe: true })).toEqual(closedCircuit);
    const reopened = record(halfOpen, 11_200, spec, { error: true, probe: true });
    expect(reopened).toMatchObject({ status: "open", openedAt: 11_200 });
    expect(admit(reopened, 15_000, spec).admission.allowed).toBe(false);
  });

  it("a probe that never reports back is replaced after tripped_duration", () => {
    const open = outcomes(closedCircuit, 1_000, [true, true, true, true]);
    const halfOpen = admit(open, 11_000, spec).state;
    expect(admit(halfOpen, 20_999, spec).admission.allowed).toBe(false);
    expect(admit(halfOpen, 21_000, spec).admission).toMatchObject({ allowed: true, probe: true });
  });

  it("late outcomes of requests admitted before the trip do not change an open circuit", () => {
    const open = outcomes(closedCircuit, 1_000, [true, true, true, true]);
    expect(record(open, 2_000, spec, { error: false, probe: false })).toBe(open);
  });
});
