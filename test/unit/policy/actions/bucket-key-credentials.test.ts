import { describe, expect, it } from "vitest";
import { canonicalCredentials } from "../../../../src/policy/actions/rate-limit.ts";

describe("credentials in bucket keys", () => {
  it("spellings of one credential's scheme are one bucket key; the credential itself is kept as sent", () => {
    for (const spelling of ["Bearer k1", "bearer k1", "BEARER  k1", "bEaReR\tk1", " Bearer k1 "]) expect(canonicalCredentials(spelling)).toBe("bearer k1");
    expect(canonicalCredentials("Bearer K1")).toBe("bearer K1");
    expect(canonicalCredentials("k1")).toBe("k1");
  });
});
