/**
 * The header map expressions read (`req.headers`): every value of a repeated field kept, built in time linear in
 * the fields (the review's 8,000 set-cookie fields made the old one copy its list per value: n², 64 ms), and
 * charged once per request and Headers object.
 */

import { describe, expect, it } from "vitest";
import { EvaluationBudget } from "../../../src/policy/evaluation-budget.ts";
import { headerMap } from "../../../src/policy/variables/header-map.ts";

/** Elements array iteration yields while `work` runs (spreads and destructuring both go through it). */
function elementsIterated(work: () => void): number {
  const iterate = Array.prototype[Symbol.iterator];
  let yielded = 0;
  Array.prototype[Symbol.iterator] = function* (this: unknown[]) {
    for (const element of iterate.call(this)) {
      yielded++;
      yield element;
    }
  } as typeof iterate;
  try {
    work();
  } finally {
    Array.prototype[Symbol.iterator] = iterate;
  }
  return yielded;
}

describe("headerMap", () => {
  it("keeps every set-cookie value and each other name once, joined", () => {
    const headers = new Headers([
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2, c"],
      ["x-one", "1"],
      ["x-one", "2"],
    ]);
    const map = headerMap(headers, new EvaluationBudget());
    expect(map.get("set-cookie")).toEqual(["a=1", "b=2, c"]);
    expect(map.get("x-one")).toEqual(["1, 2"]);
  });

  it("hostile: 8,000 set-cookie fields are put in the map in work linear in their number, not one copy of the list each", () => {
    const fields = 8000;
    const headers = new Headers(Array.from({ length: fields }, (): [string, string] => ["set-cookie", "a"]));
    let size = 0;
    const iterated = elementsIterated(() => {
      size = headerMap(headers, new EvaluationBudget()).get("set-cookie")?.length ?? 0;
    });
    expect(size).toBe(fields);
    // Each field's [name, value] pair is taken apart once (2 elements); copying the list per value was 32 million.
    expect(iterated).toBeLessThanOrEqual(4 * fields);
  });
});
