import { describe, expect, it } from "vitest";
import { send, singleEdge } from "./harness.ts";

/**
 * A per-IP limit of 2, then entries that show what later expressions see: the bucket key (grouped) and
 * `conn.client_ip` (exact).
 */
const perIpPolicy = `
inbound:
  - actions:
      - { type: rate-limit, config: { name: per-ip, capacity: 2, rate: 60s, bucket_key: [conn.client_ip] } }
  - expressions: ["actions.svc.rate_limit.bucket_key == '2001:db8:1:2::/64'"]
    actions:
      - { type: add-headers, config: { headers: { x-bucket: "2001:db8:1:2::/64" } } }
  - expressions: ["actions.svc.rate_limit.bucket_key == '198.51.100.7'"]
    actions:
      - { type: add-headers, config: { headers: { x-bucket: "198.51.100.7" } } }
  - expressions: ["conn.client_ip == '2001:db8:1:2::a'"]
    actions:
      - { type: add-headers, config: { headers: { x-exact-client-ip: "2001:db8:1:2::a" } } }
`;

function perIpRoute() {
  return singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: per-ip.yaml }\n`, { "policies/per-ip.yaml": perIpPolicy });
}

function from(ip: string): Request {
  return new Request("http://gw.test/", { headers: { "cf-connecting-ip": ip } });
}

/** Status of one request from `ip`, and the request headers the upstream saw. */
async function call(routes: ReturnType<typeof perIpRoute>, ip: string): Promise<{ status: number; seen: Record<string, string> }> {
  const response = await send(routes, from(ip));
  if (response.status !== 200) {
    await response.body?.cancel();
    return { status: response.status, seen: {} };
  }
  return { status: 200, seen: ((await response.json()) as { headers: Record<string, string> }).headers };
}

describe("conn.client_ip in a rate-limit bucket key", () => {
  it("two IPv6 addresses of one /64 share the limit; an address of the next /64 has its own", async () => {
    const routes = perIpRoute();
    expect((await call(routes, "2001:db8:1:2::a")).status).toBe(200);
    expect((await call(routes, "2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).status).toBe(200);
    expect((await call(routes, "2001:db8:1:2::b")).status).toBe(429);
    expect((await call(routes, "2001:db8:1:3::a")).status).toBe(200);
  });

  it("an IPv4-mapped IPv6 address counts as its IPv4 address; IPv4 addresses count alone", async () => {
    const routes = perIpRoute();
    expect((await call(routes, "198.51.100.7")).status).toBe(200);
    expect((await call(routes, "::ffff:198.51.100.7")).status).toBe(200);
    expect((await call(routes, "198.51.100.7")).status).toBe(429);
    expect((await call(routes, "198.51.100.8")).status).toBe(200);
  });

  it("actions.svc.rate_limit.bucket_key names the grouped bucket; the CEL variable conn.client_ip stays the exact address", async () => {
    const routes = perIpRoute();
    const exact = await call(routes, "2001:db8:1:2::a");
    expect(exact.seen).toMatchObject({ "x-bucket": "2001:db8:1:2::/64", "x-exact-client-ip": "2001:db8:1:2::a" });
    const sibling = await call(routes, "2001:db8:1:2::b");
    expect(sibling.seen["x-bucket"]).toBe("2001:db8:1:2::/64");
    expect(sibling.seen["x-exact-client-ip"]).toBeUndefined();
    const mapped = await call(routes, "::ffff:198.51.100.7");
    expect(mapped.seen["x-bucket"]).toBe("198.51.100.7");
  });
});
