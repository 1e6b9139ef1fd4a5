import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("demo route", () => {
  it("the 6th request within a minute gets 429 with retry-after", async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await SELF.fetch("http://127.0.0.1/demo/x", { headers: { "cf-connecting-ip": "10.0.0.1" } });
      statuses.push(last.status);
      if (i < 5) expect(last.headers.get("x-served-by")).toBe("tollgate");
      await last.text();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const retryAfter = Number(last!.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(61);
  });
});
