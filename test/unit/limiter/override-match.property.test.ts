import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compilePattern, type LimitOverride, literalLength, matchesPattern, OverrideIndex } from "../../../src/limiter/override-match.ts";

const SCOPE = "route:edghts_local/edghtsrt_demo";

function override(id: string, key: string, extra: Partial<LimitOverride> = {}): LimitOverride {
  return { id, scope: SCOPE, action: "per-client", key, windows: [{ capacity: 50, windowMs: 60_000 }], labels: ["60s"], version: "v1", ...extra };
}

/** The oracle: a pattern as a regular expression, every other character escaped. */
function oracle(pattern: string, key: string): boolean {
  const source = pattern
    .split("*")
    .map((piece) => piece.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s\\S]*");
  return new RegExp(`^${source}$`).test(key);
}

describe("override patterns", () => {
  it("match exactly what the regular expression with .* for each star matches", () => {
    const alphabet = fc.constantFrom("a", "b", "*", ".", ":");
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 12 }), fc.array(fc.constantFrom("a", "b", ".", ":"), { maxLength: 16 }), (patternChars, keyChars) => {
        const pattern = patternChars.join("");
        const key = keyChars.join("");
        expect(matchesPattern(compilePattern(pattern), key)).toBe(oracle(pattern, key));
      }),
      { numRuns: 3000 },
    );
  });

  it("a star matches the empty run, and pieces may not overlap", () => {
    expect(matchesPattern(compilePattern("10.0.*"), "10.0.")).toBe(true);
    expect(matchesPattern(compilePattern("a*a"), "a")).toBe(false);
    expect(matchesPattern(compilePattern("ab*ba"), "aba")).toBe(false);
    expect(matchesPattern(compilePattern("*"), "")).toBe(true);
  });

  it("counts literal characters, stars left out", () => {
    expect(literalLength("cust-*-eu*")).toBe(8);
  });
});

describe("the most specific override wins", () => {
  it("an exact key over any pattern, even a longer one", () => {
    const index = new OverrideIndex([override("rlo_1", "cust-42*"), override("rlo_2", "cust-42")]);
    expect(index.match(SCOPE, "per-client", "cust-42", 0)?.id).toBe("rlo_2");
    expect(index.match(SCOPE, "per-client", "cust-420", 0)?.id).toBe("rlo_1");
  });

  it("among patterns, the most literal characters, then the earliest created", () => {
    const index = new OverrideIndex([override("rlo_3", "cust-*"), override("rlo_2", "*-42"), override("rlo_1", "cu*"), override("rlo_4", "cust-4*")]);
    expect(index.match(SCOPE, "per-client", "cust-42", 0)?.id).toBe("rlo_4");
    // cust-* has 5 literal characters, *-42 three and cu* two: the longest wins
    expect(index.match(SCOPE, "per-client", "cust-9", 0)?.id).toBe("rlo_3");
    const tie = new OverrideIndex([override("rlo_9", "*-42"), override("rlo_5", "ab-*")]);
    expect(tie.match(SCOPE, "per-client", "ab-42", 0)?.id).toBe("rlo_5");
  });

  it("whatever the order the overrides come in, the winner is the same", () => {
    const keys = fc.constantFrom("k1", "k*", "*1", "*", "k1*", "*k*");
    fc.assert(
      fc.property(fc.uniqueArray(keys, { minLength: 1, maxLength: 6 }), fc.constantFrom("k1", "k2", "x1", "k11"), (chosen, key) => {
        const overrides = chosen.map((pattern, i) => override(`rlo_${i}`, pattern));
        const forward = new OverrideIndex(overrides).match(SCOPE, "per-client", key, 0)?.id;
        const backward = new OverrideIndex([...overrides].reverse()).match(SCOPE, "per-client", key, 0)?.id;
        expect(forward).toBe(backward);
        const winner = overrides.find((candidate) => candidate.id === forward);
        const matching = overrides.filter((candidate) => oracle(candidate.key, key));
        if (!winner) expect(matching).toEqual([]);
        else for (const other of matching) expect(literalLength(winner.key)).toBeGreaterThanOrEqual(literalLength(other.key));
      }),
    );
  });

  it("only the override's scope and action", () => {
    const index = new OverrideIndex([override("rlo_1", "*")]);
    expect(index.match(SCOPE, "other-action", "k", 0)).toBeUndefined();
    expect(index.match("route:edghts_local/edghtsrt_api", "per-client", "k", 0)).toBeUndefined();
  });

  it("an expired override stops matching at its time, and the next most specific one decides", () => {
    const index = new OverrideIndex([override("rlo_1", "cust-42", { expiresAt: 10_000 }), override("rlo_2", "cust-*")]);
    expect(index.match(SCOPE, "per-client", "cust-42", 9_999)?.id).toBe("rlo_1");
    expect(index.match(SCOPE, "per-client", "cust-42", 10_000)?.id).toBe("rlo_2");
  });

  it("a hostile key of 16,384 characters against 100 patterns of 256 answers in time linear in the key", () => {
    const patterns = Array.from({ length: 100 }, (_, i) => override(`rlo_${String(i).padStart(3, "0")}`, `${"a*".repeat(16)}${"b".repeat(200)}${i}`));
    const index = new OverrideIndex(patterns);
    expect(index.match(SCOPE, "per-client", "a".repeat(16_384), 0)).toBeUndefined();
  });
});
