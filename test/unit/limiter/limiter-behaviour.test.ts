import { emptyWindow, hit, type WindowState } from "../../../src/limiter/sliding-window.ts";
import { limiterBehaviour } from "../../shared/limiter-behaviour.ts";

limiterBehaviour("pure sliding window", () => {
  let state: WindowState = emptyWindow;
  let now = 1_700_000_000_000;
  return async (spec) => {
    now += 7;
    const result = hit(state, now, spec);
    state = result.state;
    return result.decision;
  };
});
