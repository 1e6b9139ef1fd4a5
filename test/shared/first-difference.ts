/**
 * Where two byte arrays first differ: -1 when they are the same, else the first index at which they differ (the
 * shorter one's length when one is the other's start). Tests assert it is -1 instead of `toEqual` on the arrays,
 * which compares element by element through the matcher's generic equality: seconds for a body of a few hundred
 * kilobytes in workerd (a 2 MB one took 11 s).
 */
export function firstDifference(actual: Uint8Array, expected: Uint8Array): number {
  const shorter = Math.min(actual.byteLength, expected.byteLength);
  for (let i = 0; i < shorter; i++) if (actual[i] !== expected[i]) return i;
  return actual.byteLength === expected.byteLength ? -1 : shorter;
}
