/**
 * The agent sets V8's heap growth once at start (src/agent/heap-growth.ts). The test runs a real Node with V8's
 * GC trace and reads the factor of every old-generation limit it sets. `--optimize-for-size` puts V8 in the slow
 * growth it also falls into after the agent has sat idle (a limit of 1.1 × what is live), so the effect shows
 * without waiting for V8's memory reducer.
 */

import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const CHURN = fileURLToPath(new URL("../fixtures/heap-growth/churn.ts", import.meta.url));

/** The factor of each old-generation limit V8 set while the fixture ran. */
async function limitFactors(...args: string[]): Promise<number[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--trace-gc-verbose", "--optimize-for-size", CHURN, ...args], {
    maxBuffer: 64 * 1024 * 1024,
  });
  expect(stdout).toContain("kept 100000");
  return [...stdout.matchAll(/\[HeapController\] Limit: old size: \d+ KB, new limit: \d+ KB \(([\d.]+)\)/g)].map((match) => Number(match[1]));
}

describe("the agent's heap growth", () => {
  it("lets the heap grow to 4 × what is live before a full collection, even where V8 would grow it by 1.1 ×", async () => {
    const [v8Own, steady] = await Promise.all([limitFactors(), limitFactors("steady")]);
    expect(v8Own.length).toBeGreaterThan(0);
    expect(Math.min(...v8Own)).toBeLessThan(1.5);
    expect(steady.length).toBeGreaterThan(0);
    expect(new Set(steady)).toEqual(new Set([4]));
  });
});
