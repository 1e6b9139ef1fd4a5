/**
 * Which rate-limit override decides a bucket: pure matching of a bucket key value (as
 * `actions.svc.rate_limit.bucket_key` shows it) against the overrides of one (scope, action), with the clock
 * passed in. The most specific override wins: an exact key over any pattern; among patterns (`*` matches any
 * run of characters, the empty one too) the one with the most literal characters, then the earliest created.
 * An override past its expiry never matches, so it ends at its time with no request to remove it.
 */

import type { WindowRule } from "./window-rules.ts";

/** One override as the gateway applies it (the management API stores it; see docs/management-api.md). */
export interface LimitOverride {
  /** `rlo_…`: ids sort by creation time, which breaks ties between patterns. */
  readonly id: string;
  /** The bucket scope it applies to: `route:<edge>/<route>` or `tunnel:<id>`. */
  readonly scope: string;
  /** The `name` of the rate-limit action. */
  readonly action: string;
  /** A bucket key value, or a pattern when it holds `*`. */
  readonly key: string;
  /** The limits applied instead of the action's: its windows, in order. */
  readonly windows: readonly WindowRule[];
  /** How 429 messages and RateLimit fields name each window (`60s`, `month`), in the order of `windows`. */
  readonly labels: readonly string[];
  /** Epoch milliseconds after which it no longer applies; undefined: never expires. */
  readonly expiresAt?: number;
  /** Changes whenever the override does (its `updated_at`), so a cache can keep what it compiled from it. */
  readonly version: string;
}

/** Whether `key` is a pattern (holds a `*`) rather than one exact key value. */
export function isPattern(key: string): boolean {
  return key.includes("*");
}

/** Characters of a pattern other than `*`: the more, the more specific. */
export function literalLength(pattern: string): number {
  let count = 0;
  for (const char of pattern) if (char !== "*") count++;
  return count;
}

/**
 * A compiled pattern: its literal pieces between stars. Matching is a prefix check, a suffix check and one
 * leftmost `indexOf` per middle piece (leftmost is always right for `*`-only patterns), so a match costs
 * about the key's length per piece, never a backtracking search.
 */
export interface CompiledPattern {
  readonly pieces: readonly string[];
}

export function compilePattern(pattern: string): CompiledPattern {
  return { pieces: pattern.split("*") };
}

export function matchesPattern({ pieces }: CompiledPattern, key: string): boolean {
  if (pieces.length === 1) return key === pieces[0];
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (key.length < first.length + last.length || !key.startsWith(first) || !key.endsWith(last)) return false;
  let at = first.length;
  const end = key.length - last.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i]!;
    if (piece === "") continue;
    const found = key.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}

interface PatternEntry {
  readonly override: LimitOverride;
  readonly compiled: CompiledPattern;
  readonly literal: number;
}

interface ActionOverrides {
  readonly exact: Map<string, LimitOverride>;
  /** Most specific first: most literal characters, then earliest created (lowest id). */
  readonly patterns: PatternEntry[];
}

/** Orders patterns by the documented rule: longer literal text first, then the earlier id. */
function moreSpecificFirst(a: PatternEntry, b: PatternEntry): number {
  if (a.literal !== b.literal) return b.literal - a.literal;
  return a.override.id < b.override.id ? -1 : a.override.id > b.override.id ? 1 : 0;
}

/** The overrides of one account, indexed by (scope, action) and built once per refresh. */
export class OverrideIndex {
  /** scope → action → its overrides: two Map lookups, no key built per request. */
  private readonly byScope = new Map<string, Map<string, ActionOverrides>>();
  readonly size: number;

  constructor(overrides: readonly LimitOverride[]) {
    this.size = overrides.length;
    for (const override of overrides) {
      let actions = this.byScope.get(override.scope);
      if (!actions) this.byScope.set(override.scope, (actions = new Map()));
      let entry = actions.get(override.action);
      if (!entry) {
        entry = { exact: new Map(), patterns: [] };
        actions.set(override.action, entry);
      }
      if (isPattern(override.key)) {
        entry.patterns.push({ override, compiled: compilePattern(override.key), literal: literalLength(override.key) });
      } else {
        const held = entry.exact.get(override.key);
        // Two exact overrides of one key cannot be stored (the store refuses the second); the earlier wins anyway.
        if (!held || override.id < held.id) entry.exact.set(override.key, override);
      }
    }
    for (const actions of this.byScope.values()) for (const entry of actions.values()) entry.patterns.sort(moreSpecificFirst);
  }

  /** The override deciding bucket `key` of `action` in `scope` at `now`, or undefined: the action's own limits apply. */
  match(scope: string, action: string, key: string, now: number): LimitOverride | undefined {
    if (this.size === 0) return undefined;
    const entry = this.byScope.get(scope)?.get(action);
    if (!entry) return undefined;
    const exact = entry.exact.get(key);
    if (exact && live(exact, now)) return exact;
    for (const pattern of entry.patterns) {
      if (live(pattern.override, now) && matchesPattern(pattern.compiled, key)) return pattern.override;
    }
    return undefined;
  }
}

function live(override: LimitOverride, now: number): boolean {
  return override.expiresAt === undefined || now < override.expiresAt;
}

/** An index with no overrides: what an account without any has. */
export const NO_OVERRIDES = new OverrideIndex([]);

/**
 * What a rate-limit action asks (its `overrides` service, src/policy/exchange.ts): the override deciding bucket
 * `key` of `action` in `scope` now, or undefined; a promise when this request must first read a fresh copy.
 * `background`: where a refresh may run after the response.
 */
export interface LimitOverrides {
  find(
    scope: string,
    action: string,
    key: string,
    background?: { waitUntil(task: Promise<unknown>): void },
  ): LimitOverride | undefined | Promise<LimitOverride | undefined>;
}
