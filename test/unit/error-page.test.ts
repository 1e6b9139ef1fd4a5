import { describe, expect, it } from "vitest";
import { ErrorCode, ServiceError } from "../../src/errors.ts";
import { ERROR_PAGE_CSP, MAX_PAGE_MESSAGE_CHARS, errorPageHtml, errorPageResponse, escapeHtml, truncate } from "../../src/error-page.ts";

const hostile = `<script>alert(1)</script><img src=x onerror="alert(2)"> & 'quoted'`;

describe("the HTML error page", () => {
  it("shows the error code, the status, the message, what to do and the operation id", () => {
    const error = new ServiceError(404, 3200, "Tunnel a.localhost not found.", { advice: { title: "This tunnel is offline", steps: ["Start the agent."] } });
    const html = errorPageHtml(error, "op_123");
    expect(html).toContain("<h1>This tunnel is offline</h1>");
    expect(html).toContain("<code>ERR_SVC_3200</code>");
    expect(html).toContain("404 Not Found");
    expect(html).toContain("Tunnel a.localhost not found.");
    expect(html).toContain("<li>Start the agent.</li>");
    expect(html).toContain("<code>op_123</code>");
    expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
  });

  it("refers to nothing outside itself: no script, no link, no external URL", () => {
    const html = errorPageHtml(new ServiceError(500, ErrorCode.internal, "boom"), "op_1");
    expect(html).not.toMatch(/<script|<link|src=|href=|url\(/i);
  });

  it("makes a hostile message, title, step and operation id inert", () => {
    const error = new ServiceError(404, ErrorCode.noRoute, hostile, { advice: { title: hostile, steps: [hostile] } });
    const html = errorPageHtml(error, hostile);
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img");
    expect(html).not.toContain('"alert(2)"');
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt; &amp; &#39;quoted&#39;");
  });

  it(`shows at most ${MAX_PAGE_MESSAGE_CHARS} characters of a 100,000-character message`, () => {
    const error = new ServiceError(404, ErrorCode.noRoute, `No route serves path /${"a".repeat(100_000)}.`);
    const html = errorPageHtml(error, "op_1");
    const shown = /<p class="message">([^<]*)<\/p>/.exec(html)?.[1] ?? "";
    expect(shown.length).toBe(MAX_PAGE_MESSAGE_CHARS);
    expect(shown.endsWith("…")).toBe(true);
    expect(html.length).toBeLessThan(6_000);
  });

  it("without advice of its own, says what to do by status", () => {
    expect(errorPageHtml(new ServiceError(502, ErrorCode.upstreamUnavailable, "x"), "op_1")).toContain("Try again in a moment.");
    expect(errorPageHtml(new ServiceError(404, ErrorCode.notFound, "x"), "op_1")).toContain("Check the address for a typing mistake.");
  });

  it("names the reason of the statuses the edge answers heads and floods with (414, 429, 431, 501)", () => {
    const shown = (status: number) => errorPageHtml(new ServiceError(status, 3210, "x"), "op_1");
    expect(shown(414)).toContain("414 URI Too Long");
    expect(shown(429)).toContain("429 Too Many Requests");
    expect(shown(431)).toContain("431 Request Header Fields Too Large");
    expect(shown(501)).toContain("501 Not Implemented");
  });

  it("is served with the status, the error's headers and headers that keep it inert", async () => {
    const response = errorPageResponse(new ServiceError(405, ErrorCode.methodNotAllowed, "no", { headers: { allow: "GET, HEAD" } }), "op_9");
    expect(response.status).toBe(405);
    expect(Object.fromEntries(response.headers)).toEqual({
      allow: "GET, HEAD",
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "content-security-policy": ERROR_PAGE_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "x-operation-id": "op_9",
    });
    expect(ERROR_PAGE_CSP).toContain("default-src 'none'");
    expect(await response.text()).toContain("ERR_SVC_205");
  });
});

describe("escapeHtml and truncate", () => {
  it("escapes the five characters that matter in content and quoted attributes", () => {
    expect(escapeHtml(`&<>"'`)).toBe("&amp;&lt;&gt;&quot;&#39;");
  });

  it("never splits a surrogate pair", () => {
    const cut = truncate(`${"a".repeat(8)}😀${"b".repeat(10)}`, 10);
    expect(cut).toBe(`${"a".repeat(8)}…`);
    expect(truncate("short", 10)).toBe("short");
  });
});
