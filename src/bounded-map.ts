/**
 * Eviction for maps used as bounded least-recently-used memories: `Map` keeps insertion order, so the oldest entry
 * is the first. Entries are dropped an eighth of the bound at a time, in one pass: V8 leaves a deleted entry's slot
 * in the table until it is rebuilt, and every new iterator walks over those slots from the front, so dropping one
 * entry per insertion costs time in proportion to the map's size (docs/benchmark.md#figures-behind-constants-in-the-code),
 * which a client sending new keys could drive on every request.
 */

/** The share of the bound dropped at once, as a divisor. */
const EVICTED_SHARE = 8;

/** Makes room for one more entry in `map`, kept to at most `bound` entries: drops the oldest, an eighth of the bound at a time. */
export function makeRoom<K, V>(map: Map<K, V>, bound: number): void {
  if (map.size < bound) return;
  let drop = map.size - bound + Math.max(1, Math.floor(bound / EVICTED_SHARE));
  for (const key of map.keys()) {
    map.delete(key);
    if (--drop <= 0) return;
  }
}

/**
 * Frees `need` of a budget of `limit` (bytes, say) of which `used()` is in use: when it does not fit, `forget`s the
 * oldest keys of `map` (which must delete them and lower `used()`) until it fits with an eighth of the limit to spare.
 */
export function freeBudget<K, V>(map: Map<K, V>, need: number, limit: number, used: () => number, forget: (key: K) => void): void {
  if (used() + need <= limit) return;
  const target = limit - Math.floor(limit / EVICTED_SHARE);
  for (const key of map.keys()) {
    if (used() + need <= target) return;
    forget(key);
  }
}
