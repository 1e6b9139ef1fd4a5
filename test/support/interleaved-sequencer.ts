/**
 * The order in which `npm test` hands test files to its workers. vitest's own order runs project after project,
 * alphabetically, so the worker project — the longest, and limited by the pool's single main thread rather
 * than by the cores — started only once unit, agent, e2e and browser were done. Here files of the worker
 * project alternate with files of the others, each list in vitest's order (failed first, then longest first):
 * the pool's main thread and the Node test processes then share the cores from the start.
 *
 * A seed (`--sequence.seed=N`, or the one `--sequence.shuffle` draws) shuffles the files first, before they
 * alternate: vitest shuffles files only with its own sequencer, and the worker files, which share a workerd,
 * must pass in any order. (`--sequence.shuffle` also shuffles the tests inside each file; a seed alone does not.)
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

/** `items` in an order drawn from `seed` (mulberry32 and Fisher–Yates): the same seed, the same order. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export default class InterleavedSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { seed } = this.ctx.config.sequence;
    const byName = () => [...files].sort((a, b) => a.moduleId.localeCompare(b.moduleId));
    const sorted = seed === undefined ? await super.sort(files) : shuffled(byName(), seed);
    const workerd = sorted.filter((file) => file.project.name === WORKERD_PROJECT);
    const node = sorted.filter((file) => file.project.name !== WORKERD_PROJECT);
    return alternate(workerd, node);
  }
}
