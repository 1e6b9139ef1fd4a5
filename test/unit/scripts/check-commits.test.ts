/** scripts/check-commits.mjs: which commit subjects `npm run check` refuses. */

import { describe, expect, it } from "vitest";
import { MAX_SUBJECT_CHARS, overlongSubjects } from "../../../scripts/check-commits.mjs";

const entry = (hash: string, subject: string) => `${hash}\u0000${subject}`;

describe("commit subjects", () => {
  it("of 72 characters pass and of 73 are refused, with their hash", () => {
    const log = [entry("aaaaaaa", "x".repeat(72)), entry("bbbbbbb", "y".repeat(73)), ""].join("\n");
    expect(MAX_SUBJECT_CHARS).toBe(72);
    expect(overlongSubjects(log)).toEqual([{ hash: "bbbbbbb", subject: "y".repeat(73) }]);
  });

  it("are counted in characters, not UTF-16 units: 72 emoji pass", () => {
    expect(overlongSubjects(entry("ccccccc", "🚦".repeat(72)))).toEqual([]);
    expect(overlongSubjects(entry("ddddddd", `µ${"🚦".repeat(72)}`))).toHaveLength(1);
  });
});
