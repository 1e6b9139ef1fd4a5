/** GET …/rate_limit_buckets: a bucket of the committed /demo route read back through the API, counting nothing. */

import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callError, callJson } from "./helpers.ts";

const READ = "/edges/https/edghts_local/routes/edghtsrt_demo/rate_limit_buckets";

interface Reading {
  bucket_key: string;
  ingress: string | null;
  override: { id: string; uri: string } | null;
  windows: { window: string; capacity: number; used: number; remaining: number; retry_after: number; refill_after: number; reset_after: number }[];
}

async function demo(ip: string): Promise<number> {
  const response = await SELF.fetch("http://127.0.0.1/demo", { headers: { "cf-connecting-ip": ip } });
  await response.body?.cancel();
  return response.status;
}

const readBack = (ip: string) => callJson<Reading>("GET", `${READ}?action=demo-per-client&bucket_key=${ip}`, 200, { key: "devClient" });

describe("reading a bucket back", () => {
  it("matches the limiter after admissions and a refusal, and reading counts nothing", async () => {
    const ip = "192.0.2.10";
    expect(await readBack(ip)).toMatchObject({
      bucket_key: ip,
      ingress: "local",
      override: null,
      windows: [{ window: "60s", capacity: 5, used: 0, remaining: 5, retry_after: 0, refill_after: 0, reset_after: 0 }],
    });
    for (let i = 0; i < 3; i++) expect(await demo(ip)).toBe(200);
    const [three] = (await readBack(ip)).windows;
    expect(three).toMatchObject({ used: 3, remaining: 2, retry_after: 0 });
    expect(three!.refill_after).toBeGreaterThan(0);
    expect(three!.refill_after).toBeLessThanOrEqual(60);
    // Reading again and again spends nothing: two more are still admitted, then the 6th is refused.
    await readBack(ip);
    expect(await demo(ip)).toBe(200);
    expect(await demo(ip)).toBe(200);
    expect(await demo(ip)).toBe(429);
    const [full] = (await readBack(ip)).windows;
    expect(full).toMatchObject({ used: 5, remaining: 0 });
    expect(full!.retry_after).toBeGreaterThan(0);
  });

  it("under an override, reads the override's capacity and names it", async () => {
    const ip = "192.0.2.20";
    expect(await demo(ip)).toBe(200);
    const created = await callJson<{ id: string }>("POST", "/rate_limit_overrides", 201, {
      key: "devClient",
      json: { edge_id: "edghts_local", route_id: "edghtsrt_demo", action: "demo-per-client", bucket_key: "192.0.2.2*", capacity: 8, rate: "60s" },
    });
    const reading = await readBack(ip);
    expect(reading.override?.id).toBe(created.id);
    expect(reading.windows).toMatchObject([{ capacity: 8, used: 1, remaining: 7 }]);
  });

  it("another account gets 404; an unknown action 404; the wrong number of key parts or tier 400", async () => {
    await callError("GET", `${READ}?action=demo-per-client&bucket_key=1.2.3.4`, 404, 204, { key: "other" }, /edghts_local/);
    await callError("GET", `${READ}?action=nope&bucket_key=1.2.3.4`, 404, 204, { key: "devClient" }, /no rate-limit action named 'nope'/);
    await callError("GET", `${READ}?action=demo-per-client&bucket_key=a&bucket_key=b`, 400, 215, { key: "devClient" }, /given 1 time/);
    await callError("GET", `${READ}?action=demo-per-client`, 400, 215, { key: "devClient" }, /bucket_key/);
    await callError("GET", `${READ}?action=demo-per-client&bucket_key=a&tier=1`, 400, 215, { key: "devClient" }, /tier' must be 0 to 0/);
    await callError("GET", `${READ}?action=${"a".repeat(1024)}&bucket_key=a`, 400, 215, { key: "devClient" }, /action' must be 1 to 1023/);
  });
});
