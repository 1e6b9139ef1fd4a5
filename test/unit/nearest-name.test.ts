import { describe, expect, it } from "vitest";
import { MAX_COMPARED_NAME_CHARS, editDistance, nearestName } from "../../src/nearest-name.ts";

describe("editDistance", () => {
  it.each([
    ["name", "name", 0],
    ["nam", "name", 1],
    ["naem", "name", 1],
    ["nmae", "name", 1],
    ["", "abc", 3],
    ["kitten", "sitting", 3],
  ])("%s → %s: %i", (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
    expect(editDistance(b, a)).toBe(distance);
  });
});

describe("nearestName", () => {
  const fields = ["enabled", "tripped_duration", "rolling_window", "num_buckets", "volume_threshold", "error_threshold_percentage"];

  it("suggests within 1 edit for short words, 2 for words of 6 or more, ignoring case", () => {
    expect(nearestName("nam", ["name", "active"])).toBe("name");
    expect(nearestName("NAME", ["name", "active"])).toBe("name");
    expect(nearestName("enabeld", fields)).toBe("enabled");
    expect(nearestName("num_bucket", fields)).toBe("num_buckets");
    expect(nearestName("nm", ["name"])).toBeUndefined();
    expect(nearestName("colour", ["name", "active"])).toBeUndefined();
  });

  it("prefers the nearest, then the first", () => {
    expect(nearestName("acts", ["actor", "acts_", "act"])).toBe("acts_");
  });

  it(`compares no word longer than ${MAX_COMPARED_NAME_CHARS} characters`, () => {
    const long = "a".repeat(MAX_COMPARED_NAME_CHARS + 1);
    expect(nearestName(long, [long])).toBeUndefined();
    expect(nearestName("a".repeat(100_000), fields)).toBeUndefined();
  });
});
