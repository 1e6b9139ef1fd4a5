/**
 * Keeps V8 from collecting the whole heap every few MiB of relayed bodies once the agent has sat idle.
 *
 * Relaying churns through Buffers. After a few seconds of idle, V8's memory reducer shrinks the heap and from then on
 * sets each old-generation limit at only 1.1 × what is live, so the next transfers set off a full mark-compact every
 * few MiB: 10 MiB transfers right after an idle spell cost the agent one and a half to three times the CPU they cost
 * with this setting (docs/benchmark.md, Tunnels, has the figures). The setting fixes
 * the factor at 4, V8's own largest, in every mode: the heap may grow to 4 × what is live before a full collection,
 * as V8 already lets a busy process do. V8 reads it each time it sets a limit, so it works when set at run time
 * (`--initial-old-space-size`, which would do as much, is taken by Node only on its command line).
 */

import { setFlagsFromString } from "node:v8";

/** Also a Node command-line option: the bench starts its bare peer agents with it. */
export const HEAP_GROWING_FLAG = "--heap-growing-percent=300";

export function growHeapSteadily(): void {
  setFlagsFromString(HEAP_GROWING_FLAG);
}
