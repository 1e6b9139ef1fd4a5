/**
 * A browser gets an HTML page for an address no route serves; API clients keep the JSON envelope; the
 * tenant's own answers (rate-limit 429, custom-response) reach browsers unchanged.
 */

import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ERROR_PAGE_CSP, MAX_PAGE_MESSAGE_CHARS } from "../../../src/error-page.ts";
import { send, singleEdge } from "./harness.ts";

const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

function browserGet(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return SELF.fetch(url, { headers: { accept: BROWSER, ...headers } });
}

describe("an address no route serves", () => {
  it("answers a browser 404 with a page naming ERR_SVC_301, the host and path, and what to do", async () => {
    const response = await browserGet("http://unknown.example/some/where");
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("content-security-policy")).toBe(ERROR_PAGE_CSP);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await response.text();
    expect(html).toContain("<h1>No route for this address</h1>");
    expect(html).toContain("<code>ERR_SVC_301</code>");
    expect(html).toContain("No route of this gateway serves host &#39;unknown.example&#39; and path &#39;/some/where&#39;.");
    expect(html).toContain("add a route for this host and path to policies/gateway.yaml");
  });

  it("answers curl (Accept */*) the JSON envelope as before", async () => {
    const response = await SELF.fetch("http://unknown.example/some/where", { headers: { accept: "*/*" } });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toEqual({
      error_code: "ERR_SVC_301",
      status_code: 404,
      msg: "No route of this gateway serves host 'unknown.example' and path '/some/where'.",
      details: { host: "unknown.example", path: "/some/where", operation_id: response.headers.get("x-operation-id") },
    });
  });

  it("makes markup in the path inert", async () => {
    const response = await browserGet(`http://unknown.example/<script>alert(1)</script>/'"><img src=x onerror=alert(2)>`);
    const html = await response.text();
    expect(html).not.toMatch(/<script|<img|onerror="/i);
    expect(html).toContain("/%3Cscript%3Ealert(1)%3C/script%3E/&#39;%22%3E%3Cimg%20src=x%20onerror=alert(2)%3E");
  });

  it(`shows at most ${MAX_PAGE_MESSAGE_CHARS} characters of a 10,000-character path; the JSON keeps it whole`, async () => {
    const path = `/${"p".repeat(10_000)}`;
    const page = await (await browserGet(`http://unknown.example${path}`)).text();
    const shown = (/<p class="message">([^<]*)<\/p>/.exec(page)?.[1] ?? "").replaceAll("&#39;", "'");
    expect(shown.length).toBe(MAX_PAGE_MESSAGE_CHARS);
    expect(shown.endsWith("p…")).toBe(true);
    expect(page.length).toBeLessThan(6_000);
    const json = (await (await SELF.fetch(`http://unknown.example${path}`)).json()) as { details: { path: string } };
    expect(json.details.path).toBe(path);
  });
});

describe("the tenant's answers reach a browser unchanged", () => {
  it("the demo route's rate-limit 429 stays the rate-limit action's JSON", async () => {
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await browserGet("http://127.0.0.1/demo/x", { "cf-connecting-ip": "203.0.113.77" });
      if (i < 5) await last.text();
    }
    expect(last!.status).toBe(429);
    expect(last!.headers.get("content-type")).toBe("application/json");
    expect(last!.headers.get("content-security-policy")).toBeNull();
    expect(await last!.json()).toMatchObject({ error_code: "ERR_SVC_226", status_code: 429 });
  });

  it("a policy's custom-response is sent as configured", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: custom.yaml }\n`, {
      "policies/custom.yaml": `
inbound:
  - actions:
      - type: custom-response
        config:
          status_code: 404
          body: '{"gone": true}'
          headers: { content-type: application/json }
`,
    });
    const response = await send(routes, new Request("http://gw.test/x", { headers: { accept: BROWSER } }));
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.text()).toBe('{"gone": true}');
  });
});
