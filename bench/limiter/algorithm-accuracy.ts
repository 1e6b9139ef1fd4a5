/**
 * The pure-algorithm accuracy figure: src/limiter/sliding-window.ts driven with simulated time over
 * long random and bursty traces (many windows each), against the exact sliding-log oracle.
 * A complement to the end-to-end run, which is limited to real time.
 */

import { emptyWindow, hit, type WindowSpec, type WindowState } from "../../src/limiter/sliding-window.ts";
import { overAdmittedAtPoints, slidingLogDecisions } from "./oracle.ts";
import { seededRandom } from "../shared/stats.ts";

type Shape = "steady" | "bursty" | "near-capacity";

interface Trace {
  readonly spec: WindowSpec;
  readonly shape: Shape;
  readonly times: number[];
}

/** Request times (ms, non-decreasing) over `windows` windows. */
function traceTimes(spec: WindowSpec, shape: Shape, windows: number, random: () => number): number[] {
  const end = spec.windowMs * windows;
  const times: number[] = [];
  // Offered load relative to capacity per window.
  const load = shape === "near-capacity" ? 1.05 : shape === "steady" ? 2 : 3;
  const meanGap = spec.windowMs / (spec.capacity * load);
  let t = 0;
  while (t < end) {
    if (shape === "bursty" && random() < 0.05) {
      const size = 1 + Math.floor(random() * Math.max(2, spec.capacity / 2));
      for (let i = 0; i < size; i++) times.push(Math.floor(t + random() * 20));
      t += meanGap * size * (0.5 + random());
    } else {
      times.push(Math.floor(t));
      t += -Math.log(1 - random()) * meanGap * (shape === "bursty" ? 1.5 : 1);
    }
  }
  return times.sort((a, b) => a - b);
}

export interface AlgorithmAccuracy {
  readonly traces: number;
  readonly requests: number;
  readonly admitted: number;
  readonly oracleAdmitted: number;
  readonly overAdmitted: number;
  readonly underAdmissionPercent: number;
  /** The worst single trace's under-admission. */
  readonly worstUnderAdmissionPercent: number;
  readonly windowsPerTrace: number;
}

const SPECS: readonly WindowSpec[] = [
  { capacity: 5, windowMs: 60_000 },
  { capacity: 100, windowMs: 60_000 },
  { capacity: 1_000, windowMs: 600_000 },
  { capacity: 250, windowMs: 3_600_000 },
];
const SHAPES: readonly Shape[] = ["steady", "bursty", "near-capacity"];

export function measureAlgorithmAccuracy(seed: number, windowsPerTrace = 40): AlgorithmAccuracy {
  const random = seededRandom(seed);
  const traces: Trace[] = SPECS.flatMap((spec) => SHAPES.map((shape) => ({ spec, shape, times: traceTimes(spec, shape, windowsPerTrace, random) })));
  let requests = 0;
  let admitted = 0;
  let oracleAdmitted = 0;
  let overAdmitted = 0;
  let worst = 0;
  for (const { spec, times } of traces) {
    let state: WindowState = emptyWindow;
    const admittedTimes: number[] = [];
    for (const time of times) {
      const next = hit(state, time, spec);
      state = next.state;
      if (next.decision.allowed) admittedTimes.push(time);
    }
    const oracle = slidingLogDecisions(times, spec.capacity, spec.windowMs).filter(Boolean).length;
    requests += times.length;
    admitted += admittedTimes.length;
    oracleAdmitted += oracle;
    overAdmitted += overAdmittedAtPoints(admittedTimes, spec.capacity, spec.windowMs);
    worst = Math.max(worst, (100 * (oracle - admittedTimes.length)) / oracle);
  }
  return {
    traces: traces.length,
    requests,
    admitted,
    oracleAdmitted,
    overAdmitted,
    underAdmissionPercent: (100 * (oracleAdmitted - admitted)) / oracleAdmitted,
    worstUnderAdmissionPercent: worst,
    windowsPerTrace,
  };
}
