/**
 * `circuit-breaker` (as ngrok's): while the upstream of this route or tunnel fails too often, requests get 503
 * `ERR_SVC_303` without reaching it. The window and the state machine are src/breaker/circuit.ts, the same as a
 * route's circuit_breaker module; only the configuration differs. The action runs inbound to refuse while the
 * circuit is open, and hands the gateway an observer that records the upstream's status when it answers. With
 * `enforce: false` nothing is refused: outcomes are recorded and `actions.svc.circuit_breaker.tripped` says
 * when a request would have been.
 */

import { z } from "zod";
import type { BreakerSpec } from "../../breaker/circuit.ts";
import { circuitOpenAnswer } from "../../breaker/open-answer.ts";
import { parseDuration } from "../duration.ts";
import { BOOL, STRING } from "../cel-types.ts";
import { defineAction } from "./action.ts";
import { declareResults } from "./results.ts";

/** ngrok's bounds of window_duration and tripped_duration. */
const MIN_DURATION_MS = 1_000;
const MAX_DURATION_MS = 120_000;
/** ngrok's bound of volume_threshold. */
export const MAX_VOLUME_THRESHOLD = 2_000_000_000;
/** ngrok fixes num_buckets at 10; up to the route module's 128 are accepted, so both ways configure the same circuits. */
export const MAX_NUM_BUCKETS = 128;

const durationSchema = (what: string) =>
  z
    .string({ error: "must be a duration string such as 10s or 2m" })
    .superRefine((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined) ctx.addIssue({ code: "custom", message: `must be a duration such as 10s or 2m (got '${text}')` });
      else if (ms < MIN_DURATION_MS) ctx.addIssue({ code: "custom", message: "must be at least 1s" });
      else if (ms > MAX_DURATION_MS) ctx.addIssue({ code: "custom", message: "must be at most 2m" });
    })
    .default("10s")
    .describe(`${what}: a duration from 1s to 2m; default 10s.`);

export const circuitBreakerConfig = z.strictObject({
  error_threshold: z
    .number({ error: "must be a number from 0 to 1" })
    .min(0, "must be at least 0")
    .max(1, "must be at most 1")
    .default(0.5)
    .describe("The share of errors (status 500 or above) in the window at which the circuit trips: 0.0 to 1.0; default 0.5."),
  volume_threshold: z
    .number({ error: "must be an integer" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(MAX_VOLUME_THRESHOLD, "must be at most 2000000000")
    .default(10)
    .describe("Outcomes the window must hold before the error share is checked: 1 to 2000000000; default 10."),
  window_duration: durationSchema("How far back outcomes count (the rolling window)"),
  tripped_duration: durationSchema("How long the circuit stays open before one probe is let through"),
  num_buckets: z
    .number({ error: "must be an integer" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(MAX_NUM_BUCKETS, `must be at most ${MAX_NUM_BUCKETS}`)
    .default(10)
    .describe("Buckets the window is divided into: 1 to 128; default 10 (ngrok's fixed value)."),
  enforce: z
    .boolean({ error: "must be a boolean" })
    .default(true)
    .describe("false: record outcomes and set actions.svc.circuit_breaker.tripped, but never refuse a request."),
});

export interface CircuitBreakerVars {
  /** The circuit was open: answered 503, or would have with `enforce: false`. */
  tripped: boolean;
  /** How the request found its circuit: closed, open, half_open (it is the probe), unavailable; '' before the action ran. */
  state: string;
}

declare module "./results.ts" {
  interface ActionVars {
    circuit_breaker: CircuitBreakerVars;
  }
}

/** `actions.svc.circuit_breaker.*` (and `actions.ngrok.…`): how the last circuit-breaker found its circuit. ngrok's sets none. */
const circuitBreakerResults = declareResults<CircuitBreakerVars>("circuit_breaker", { tripped: BOOL, state: STRING }, () => ({ tripped: false, state: "" }));

export const circuitBreakerAction = defineAction({
  type: "circuit-breaker",
  config: circuitBreakerConfig,
  configOptional: true,
  results: circuitBreakerResults,
  simulation: { check: true },
  compile(config, context) {
    if (context.phase !== "inbound") return { path: [], message: "runs only on requests (inbound, ngrok's on_http_request), as ngrok's does" };
    const spec: BreakerSpec = {
      trippedMs: parseDuration(config.tripped_duration)!,
      rollingWindowMs: parseDuration(config.window_duration)!,
      numBuckets: config.num_buckets,
      volumeThreshold: config.volume_threshold,
      errorThresholdPercentage: config.error_threshold,
    };
    const label = { of: `this traffic policy (${context.position})`, configuredBy: `the traffic policy's circuit-breaker action (${context.position})` };
    return {
      type: "circuit-breaker",
      async run(exchange, { breakers }) {
        const vars = exchange.vars.circuit_breaker;
        // Where there is no upstream to protect (tools, tests running a policy), the circuit is closed.
        if (!breakers) {
          vars.tripped = false;
          vars.state = "closed";
          return undefined;
        }
        const passage = await breakers.enter({ scope: exchange.scope, action: context.position }, spec);
        if (passage.open) {
          vars.tripped = true;
          vars.state = passage.view.status;
          return config.enforce ? circuitOpenAnswer(label, passage.view, passage.now) : undefined;
        }
        vars.tripped = false;
        vars.state = passage.state;
        (exchange.upstreamObservers ??= []).push((status) => passage.report(status));
        return undefined;
      },
    };
  },
});
