/** The management API answers a browser that lands on it (the gateway root, in the default config) with a page. */

import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ERROR_PAGE_CSP } from "../../../src/error-page.ts";
import { DEV_KEY } from "./keys.ts";

const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

describe("the management API in a browser", () => {
  it("the gateway root without an API key: 401 page saying what the address is and how programs call it", async () => {
    const response = await SELF.fetch("http://127.0.0.1/", { headers: { accept: BROWSER } });
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("content-security-policy")).toBe(ERROR_PAGE_CSP);
    const html = await response.text();
    expect(html).toContain("<h1>This is Tollgate&#39;s management API</h1>");
    expect(html).toContain("<code>ERR_SVC_200</code>");
    expect(html).toContain("Authorization: Bearer &lt;API key&gt;");
    expect(html).toContain(`<code>${response.headers.get("x-operation-id")}</code>`);
  });

  it("a 405 page keeps the allow header", async () => {
    const response = await SELF.fetch("http://127.0.0.1/bot_users", {
      method: "PUT",
      headers: { accept: BROWSER, authorization: `Bearer ${DEV_KEY}`, "service-version": "2" },
    });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST, GET, HEAD");
    expect(await response.text()).toContain("<code>ERR_SVC_205</code>");
  });

  it("an API client without Accept gets the JSON envelope as before", async () => {
    const response = await SELF.fetch("http://127.0.0.1/");
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_200", status_code: 401 });
  });
});
