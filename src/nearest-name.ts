/** "Did you mean": the known name nearest a misspelt one, with work bounded by the names' length. */

/** Names longer than this are not compared (known names are identifiers of a few dozen characters at most). */
export const MAX_COMPARED_NAME_CHARS = 64;

/** Edits (insert, delete, replace, swap two neighbours) from `a` to `b`: optimal string alignment distance. */
export function editDistance(a: string, b: string): number {
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) current[j] = Math.min(current[j], beforePrevious[j - 2] + 1);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length];
}

/**
 * The candidate nearest `word` if it is near enough to be a typo: 1 edit, 2 for words of 6 characters or
 * more, letter case ignored; the first of equally near ones. Words or candidates longer than
 * {@link MAX_COMPARED_NAME_CHARS} are not compared, so one call costs at most candidates × 64².
 */
export function nearestName(word: string, candidates: readonly string[]): string | undefined {
  if (word.length > MAX_COMPARED_NAME_CHARS) return undefined;
  const lower = word.toLowerCase();
  const allowed = lower.length >= 6 ? 2 : 1;
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    if (candidate.length > MAX_COMPARED_NAME_CHARS || Math.abs(candidate.length - lower.length) > allowed) continue;
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}
