/** Duration strings of traffic policies ("60s", "1m30s", "24h") to milliseconds. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^(?:(\d+)(ms|s|m|h))+$/;
const PART = /(\d+)(ms|s|m|h)/g;

/** Milliseconds of a duration string, or undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) total += Number(amount) * UNIT_MS[unit];
  return total;
}
