/**
 * The order in which `npm test` hands test files to its workers. vitest's own order runs project after project,
 * alphabetically, so the worker project — the longest, and limited by the pool's single main thread rather
 * than by the cores — started only once unit, agent, e2e and browser were done. Here files of the worker
 * project alternate with files of the others, each list in vitest's order (failed first, then longest first):
 * the pool's main thread and the Node test processes then share the cores from the start.
 */

import { BaseSequencer, type TestSpecification } from "vitest/node";

/** The project whose files alternate with everyone else's. */
const WORKERD_PROJECT = "worker";

/** `a` and `b` taken in turn, then what is left of the longer one. */
function alternate<T>(a: readonly T[], b: readonly T[]): T[] {
  const merged: T[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) merged.push(a[i]);
    if (i < b.length) merged.push(b[i]);
  }
  return merged;
}

export default class InterleavedSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const workerd = sorted.filter((file) => file.project.name === WORKERD_PROJECT);
    const node = sorted.filter((file) => file.project.name !== WORKERD_PROJECT);
    return alternate(workerd, node);
  }
}
