/**
 * ngrok's documented rate-limit and forward-internal examples (test/fixtures/ngrok-examples/) in the Worker: limits
 * that fire with 429 where ngrok says, and requests that arrive at the internal endpoint ngrok says (the upstream's
 * echo of `/via/<host>` names it).
 */

import { describe, expect, it } from "vitest";
import { ask, examplesGateway, exampleRequest as to, seenUpstream } from "./ngrok-examples-gateway.ts";

const routes = examplesGateway({
  "limits-per-host-header": ["other.limits-per-host-header.test"],
  "forward-by-host": ["api.forward-by-host.test", "admin.forward-by-host.test"],
});

/** The statuses of `count` requests made one after another. */
async function statuses(count: number, request: (index: number) => Request): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await ask(routes, request(i))).status);
  return out;
}
const admitted = (count: number) => Array.from({ length: count }, () => 200);

describe("rate-limit examples", () => {
  it("10 a minute per client address: the 11th gets 429 with retry-after, another address goes on", async () => {
    const from = (clientIp: string) => () => to("limits-per-client-ip", "/", { clientIp });
    expect(await statuses(10, from("198.51.100.1"))).toEqual(admitted(10));
    const limited = await ask(routes, from("198.51.100.1")());
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await ask(routes, from("198.51.100.2")())).status).toBe(200);
  });

  it("30 a minute per Host, whatever the client: the 31st gets 429, another host is counted apart", async () => {
    expect(await statuses(30, (i) => to("limits-per-host-header", "/", { clientIp: `192.0.2.${i + 1}` }))).toEqual(admitted(30));
    expect((await ask(routes, to("limits-per-host-header"))).status).toBe(429);
    expect(
      (await ask(routes, new Request("https://other.limits-per-host-header.test/", { headers: { host: "other.limits-per-host-header.test" } }))).status,
    ).toBe(200);
  });

  it("a CEL key, the Host or 'unknown': 30 a minute per Host, and requests without Host share the bucket 'unknown'", async () => {
    expect(await statuses(30, (i) => to("limits-host-ternary-key", "/", { clientIp: `192.0.2.${i + 1}` }))).toEqual(admitted(30));
    expect((await ask(routes, to("limits-host-ternary-key"))).status).toBe(429);
    // Routed by its URL, without a Host header: the expression's other branch names the bucket.
    const hostless = (i: number) => new Request("https://limits-host-ternary-key.test/", { headers: { "cf-connecting-ip": `192.0.2.${i + 1}` } });
    expect(await statuses(30, hostless)).toEqual(admitted(30));
    expect((await ask(routes, hostless(30))).status).toBe(429);
  });

  it("req.url.contains('/api/specific_endpoint'): 30 a minute there, other URLs not limited", async () => {
    const specific = () => to("limits-specific-endpoint", "/api/specific_endpoint", { clientIp: "198.51.100.3" });
    expect(await statuses(30, specific)).toEqual(admitted(30));
    expect((await ask(routes, specific())).status).toBe(429);
    expect((await ask(routes, to("limits-specific-endpoint", "/api/other", { clientIp: "198.51.100.3" }))).status).toBe(200);
  });

  it("authorization tiers: 10 a minute without Authorization, more with it", async () => {
    const anonymous = () => to("limits-authorization-tiers", "/", { clientIp: "198.51.100.4" });
    expect(await statuses(10, anonymous)).toEqual(admitted(10));
    expect((await ask(routes, anonymous())).status).toBe(429);
    const signedIn = () => to("limits-authorization-tiers", "/", { clientIp: "198.51.100.4", headers: { authorization: "Bearer k1" } });
    expect(await statuses(11, signedIn)).toEqual(admitted(11));
  });

  it("pricing tiers: 10 a minute without Tier, more with Tier: GOLD (any case)", async () => {
    const free = () => to("limits-pricing-tiers", "/", { clientIp: "198.51.100.5" });
    expect(await statuses(10, free)).toEqual(admitted(10));
    expect((await ask(routes, free())).status).toBe(429);
    const gold = () => to("limits-pricing-tiers", "/", { clientIp: "198.51.100.5", headers: { tier: "GOLD" } });
    expect(await statuses(11, gold)).toEqual(admitted(11));
  });
});

/** The upstream path that served a request: `/via/<internal host>/<path>`, or the fixture's own `/<path>`. */
const servedAt = async (request: Request) => (await seenUpstream(routes, request)).url;

describe("forward-internal examples", () => {
  it("one endpoint: every request is served by example.internal", async () => {
    expect(await servedAt(to("forward-one-endpoint", "/x?y=1"))).toBe("/via/example.internal/x?y=1");
  });

  it("by path: /abc and /xyz go to their endpoints, other paths to the route's own upstream", async () => {
    expect(await servedAt(to("forward-by-path", "/abc/1"))).toBe("/via/abc.internal/abc/1");
    expect(await servedAt(to("forward-by-path", "/xyz"))).toBe("/via/xyz.internal/xyz");
    expect(await servedAt(to("forward-by-path", "/other"))).toBe("/other");
  });

  it("binding: internal: /api/ to api.internal, the rest to homepage.internal", async () => {
    expect(await servedAt(to("forward-binding-internal", "/api/users"))).toBe("/via/api.internal/api/users");
    expect(await servedAt(to("forward-binding-internal", "/about"))).toBe("/via/homepage.internal/about");
  });

  it("fallback: served by endpoint-1.internal while it exists, else 302 to www.example.com", async () => {
    expect(await servedAt(to("forward-fallback-redirect", "/page"))).toBe("/via/endpoint-1.internal/page");
    const withoutIt = examplesGateway({}, ["endpoint-1.internal"]);
    const answer = await ask(withoutIt, to("forward-fallback-redirect", "/page"));
    expect({ status: answer.status, location: answer.headers.get("location") }).toEqual({ status: 302, location: "https://www.example.com" });
  });

  it("by query parameter: ?debug=true to debug-service, the rest to production-service", async () => {
    expect(await servedAt(to("forward-by-query-param", "/?debug=true"))).toBe("/via/debug-service.internal/?debug=true");
    expect(await servedAt(to("forward-by-query-param", "/?debug=no"))).toBe("/via/production-service.internal/?debug=no");
  });

  it("by host: api.* and admin.* to their services, the rest to main-app", async () => {
    const at = (host: string) => new Request(`https://${host}/h`, { headers: { "cf-connecting-ip": "203.0.113.7" } });
    expect(await servedAt(at("api.forward-by-host.test"))).toBe("/via/api-service.internal/h");
    expect(await servedAt(at("admin.forward-by-host.test"))).toBe("/via/admin-service.internal/h");
    expect(await servedAt(at("forward-by-host.test"))).toBe("/via/main-app.internal/h");
  });

  it("by method: writes to the primary, reads to the replica, other paths to the route's own upstream", async () => {
    expect(await servedAt(to("forward-by-method", "/api/item", { method: "POST", body: "{}" }))).toBe("/via/primary-database.internal/api/item");
    expect(await servedAt(to("forward-by-method", "/api/item"))).toBe("/via/read-replica.internal/api/item");
    expect(await servedAt(to("forward-by-method", "/web"))).toBe("/web");
  });

  it("by cookie: ab_test=A and B to their experiments, no cookie to control", async () => {
    const withCookie = (cookie?: string) => to("forward-by-cookie", "/c", cookie ? { headers: { cookie } } : {});
    expect(await servedAt(withCookie("theme=dark; ab_test=A"))).toBe("/via/experiment-a.internal/c");
    expect(await servedAt(withCookie("ab_test=B"))).toBe("/via/experiment-b.internal/c");
    expect(await servedAt(withCookie())).toBe("/via/control.internal/c");
  });

  it("random split: 40 requests reach both a.internal and b.internal", async () => {
    const targets = new Set<string>();
    for (let i = 0; i < 40; i++) targets.add((await servedAt(to("forward-random-split", "/r"))).split("/")[2]);
    expect([...targets].sort()).toEqual(["a.internal", "b.internal"]);
  });
});
