/** Starting and stopping a test file's servers so that a failure halfway leaves none of them running. */

/**
 * Waits for every start to settle, then throws the first failure: unlike `Promise.all`, it never leaves a
 * server still starting, unseen, after a sibling failed, so `afterAll` can stop everything that came up.
 * Assign each server as it comes up: `allStarted(Edge.start().then((started) => (edge = started)), …)`.
 */
export async function allStarted(...starts: ReadonlyArray<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(starts)).find((result) => result.status === "rejected");
  if (failed) throw failed.reason;
}

/** Runs every stop in order, each even if an earlier one failed, then throws the first failure. */
export async function stopAll(...stops: ReadonlyArray<() => unknown>): Promise<void> {
  const failures: unknown[] = [];
  for (const stop of stops) {
    try {
      await stop();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) throw failures[0];
}
