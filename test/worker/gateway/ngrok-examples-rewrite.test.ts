/**
 * ngrok's documented url-rewrite, redirect and basic-auth examples (test/fixtures/ngrok-examples/) in the Worker,
 * in front of the real local upstream: what the upstream receives, the redirects and the 401s ngrok's docs
 * describe. Where a documented pattern does not match the documented request under RE2 (ngrok's regex engine and
 * Tollgate's), the test shows what the pattern does match.
 */

import { describe, expect, it } from "vitest";
import { ask, examplesGateway, exampleRequest as to, seenUpstream } from "./ngrok-examples-gateway.ts";

const routes = examplesGateway();
const basic = (credential: string) => ({ authorization: `Basic ${btoa(credential)}` });

describe("url-rewrite examples", () => {
  it("/products reaches the upstream as /products.php; other paths are not rewritten", async () => {
    expect((await seenUpstream(routes, to("rewrite-products-path", "/products"))).url).toBe("/products.php");
    expect((await seenUpstream(routes, to("rewrite-products-path", "/products/1"))).url).toBe("/products/1");
  });

  it("/products/123 reaches the upstream as /products.php?query=123, as ngrok says", async () => {
    // `[.*]` is a class of '.' and '*', so the group matches nothing: `/products/` alone becomes `/products.php?query=`
    // and the 123 after it stays, which gives the documented URL.
    expect((await seenUpstream(routes, to("rewrite-products-regex", "/products/123"))).url).toBe("/products.php?query=123");
    expect((await seenUpstream(routes, to("rewrite-products-regex", "/products"))).url).toBe("/products.php?query=");
  });

  it("${req.url.authority}/products/… replaced by a path: /products.php?query=123 on the same host", async () => {
    expect((await seenUpstream(routes, to("rewrite-products-interpolated", "/products/123"))).url).toBe("/products.php?query=123");
    expect((await seenUpstream(routes, to("rewrite-products-interpolated", "/other/products/1"))).url).toBe("/other/products/1");
  });

  it("blog permalinks: /blog/11/hello/ reaches the CMS as /blog/index.php?p=11&title=hello", async () => {
    expect((await seenUpstream(routes, to("rewrite-blog-permalink", "/blog/11/hello/"))).url).toBe("/blog/index.php?p=11&title=hello");
    // The page's own example, /blog/11/example-title, has a '-' that [a-zA-Z]+ does not match and no final '/':
    // under RE2 the pattern does not match it, so it is not rewritten (on ngrok neither).
    expect((await seenUpstream(routes, to("rewrite-blog-permalink", "/blog/11/example-title"))).url).toBe("/blog/11/example-title");
  });

  it("A/B by rand.double(): every request reaches b.internal, some rewritten to /path/to/test-b and some not", async () => {
    const urls = new Set<string>();
    for (let i = 0; i < 40; i++) urls.add((await seenUpstream(routes, to("rewrite-a-b-test", "/path/to/test"))).url);
    // The chance that 40 fair draws all fall one way is 2 in 2^40.
    expect([...urls].sort()).toEqual(["/via/b.internal/path/to/test", "/via/b.internal/path/to/test-b"]);
  });
});

describe("redirect examples", () => {
  it("/products answers 302 with an absolute location on the same host; other paths reach the upstream", async () => {
    const answer = await ask(routes, to("redirect-products", "/products"));
    expect(answer.status).toBe(302);
    expect(answer.headers.get("location")).toBe("https://redirect-products.test/store/products");
    expect((await seenUpstream(routes, to("redirect-products", "/about"))).url).toBe("/about");
  });

  it("/api/v1/… answers 302 to the same path under /api/v2/", async () => {
    const answer = await ask(routes, to("redirect-api-v1-to-v2", "/api/v1/users?page=2"));
    expect(answer.status).toBe(302);
    expect(answer.headers.get("location")).toBe("https://redirect-api-v1-to-v2.test/api/v2/users?page=2");
  });

  it("status_code 301 and headers: the documented /api/v1/users?id=123 is not matched under RE2; /api/v1/userid=7 is", async () => {
    // In `/api/v1/users?id=([0-9]+)` the `?` makes the s optional; it matches no literal '?'.
    expect((await seenUpstream(routes, to("redirect-api-version-regex", "/api/v1/users?id=123"))).url).toBe("/api/v1/users?id=123");
    const answer = await ask(routes, to("redirect-api-version-regex", "/api/v1/userid=7"));
    expect(answer.status).toBe(301);
    expect(answer.headers.get("location")).toBe("https://redirect-api-version-regex.test/api/v2/users/7/");
    expect(answer.headers.get("x-redirected")).toBe("true");
  });

  it("to: /api/v2/geo?city=${conn.geo.city}: 302 with the city encoded; the redirected request is not redirected again", async () => {
    const cf = { city: "San Francisco" };
    const answer = await ask(routes, to("redirect-geo-city", "/api/v2/geo", { cf }));
    expect(answer.status).toBe(302);
    const location = answer.headers.get("location");
    expect(location).toBe("https://redirect-geo-city.test/api/v2/geo?city=San%20Francisco");
    // The URL it makes is the URL asked for: unchanged, so no further action, as ngrok documents.
    expect((await seenUpstream(routes, to("redirect-geo-city", "/api/v2/geo?city=San%20Francisco", { cf }))).url).toBe("/api/v2/geo?city=San%20Francisco");
  });
});

describe("basic-auth examples", () => {
  it("user:password1 and admin:password2 get 200; none get 401 with WWW-Authenticate of the realm", async () => {
    for (const credential of ["user:password1", "admin:password2"]) {
      const answer = await ask(routes, to("basic-auth-credentials", "/", { headers: basic(credential) }));
      expect(answer).toMatchObject({ status: 200, text: "Successfully Authenticated!" });
    }
    const missing = await ask(routes, to("basic-auth-credentials"));
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Basic realm="sample-realm"');
    expect(JSON.parse(missing.text)).toMatchObject({ error_code: "ERR_SVC_200", status_code: 401 });
  });

  it("a wrong password, a known password under another user, or a malformed header: 401 ERR_SVC_203, the password never echoed", async () => {
    for (const headers of [basic("user:password2"), basic("admin:password1"), basic("user:password1x"), { authorization: "Basic %%%" }]) {
      const answer = await ask(routes, to("basic-auth-credentials", "/", { headers }));
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.text)).toMatchObject({ error_code: "ERR_SVC_203" });
      expect(answer.text).not.toMatch(/password/);
    }
  });

  it("the agent config's credentials: the default realm is ngrok, and the right pair reaches the upstream", async () => {
    const missing = await ask(routes, to("basic-auth-agent-config"));
    expect(missing.headers.get("www-authenticate")).toBe('Basic realm="ngrok"');
    expect((await seenUpstream(routes, to("basic-auth-agent-config", "/app", { headers: basic("username2:password2") }))).url).toBe("/app");
  });

  it("after restrict-ips with enforce: false, an allowed address or valid credentials reach service.internal, others get 'Access denied'", async () => {
    expect((await seenUpstream(routes, to("basic-auth-after-ip-restriction", "/x", { clientIp: "192.0.2.10" }))).url).toBe("/via/service.internal/x");
    const stranger = { clientIp: "198.51.100.9" };
    expect(await ask(routes, to("basic-auth-after-ip-restriction", "/x", stranger))).toMatchObject({ status: 401, text: "Access denied" });
    const withCredentials = to("basic-auth-after-ip-restriction", "/x", { ...stranger, headers: basic("admin:password2") });
    expect((await seenUpstream(routes, withCredentials)).url).toBe("/via/service.internal/x");
  });
});
