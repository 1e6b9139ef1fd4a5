/**
 * The web inspector in a real browser: headless Chromium (the @sparticuz/chromium npm package) driven by
 * playwright-core, against the agent and a real edge (`wrangler dev`) and local service. Screenshots go
 * to test-artifacts/inspector/.
 */

import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { startUpstream, type Upstream } from "../agent/support/upstream.ts";
import { Edge } from "../e2e/support/edge.ts";
import { fetchPublic } from "../e2e/support/public-client.ts";
import { allStarted, stopAll } from "../support/lifecycle.ts";
import { launchChromium } from "./chromium.ts";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/inspector/", import.meta.url));

let edge: Edge;
let upstream: Upstream;
let agent: Agent;
let browser: Browser;
let page: Page;
let publicUrl: string;

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  // Each one is assigned as soon as it is up, so that afterAll stops it even if another fails to start.
  await allStarted(
    Edge.start().then((started) => (edge = started)),
    startUpstream().then((started) => (upstream = started)),
    launchChromium().then((started) => (browser = started)),
  );
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
  if (!parsed.ok) throw new Error("bad test config");
  agent = await startAgent({ config: parsed.config, tunnels: [{ name: "web", definition: { addr: String(upstream.port), inspect: true } }] });
  const [web] = await agent.ready;
  publicUrl = web.publicUrl!;
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("pageerror", (error) => console.error("inspector page error:", error));
});

afterAll(() =>
  stopAll(
    () => browser?.close(),
    () => agent?.stop(),
    () => upstream?.close(),
    () => edge?.dispose(),
  ),
);

/** Polls patiently: the whole suite shares two cores with workerd. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 15_000, interval: 50 });
const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png` });
const rows = () => page.locator(".request-row");

describe("the inspector page in Chromium", () => {
  it("shows a request live, opens it, replays it as is and modified, filters, shows tunnel status, and clears", async () => {
    await page.goto(`${agent.apiUrl}/`);
    await poll(() => page.textContent("#live")).toBe("live");
    await poll(() => page.isVisible("#empty")).toBe(true);

    // a real browser request through the tunnel (Chromium resolves *.localhost), and a JSON POST from Node
    const visitor = await browser.newPage();
    await visitor.route("**/favicon.ico", (route) => route.fulfill({ status: 204 })); // one request per visit
    const visit = await visitor.goto(`${publicUrl}/welcome?from=browser`);
    expect(visit?.status()).toBe(200);
    await visitor.close();
    const payload = JSON.stringify({ item: "book", qty: 2, tags: ["a", "b"] });
    expect((await fetchPublic(edge.url, publicUrl, "/orders/42?debug=1", { method: "POST", body: payload, headers: { "content-type": "application/json", "x-trace": "t-1" } })).status).toBe(200);

    const order = rows().filter({ hasText: "/orders/42?debug=1" });
    await order.waitFor();
    await poll(() => order.locator(".status-badge").textContent()).toBe("200");
    expect(await rows().filter({ hasText: "/welcome?from=browser" }).count()).toBe(1);
    await shot("01-list");

    // the detail: summary, headers, pretty-printed JSON body, raw bytes
    await order.click();
    await poll(() => page.textContent("#detail-title")).toBe("POST /orders/42?debug=1 → 200 OK");
    expect(await page.textContent("#detail-summary")).toContain("tunnelweb");
    expect(await page.locator("#headers tr", { hasText: "X-Trace" }).textContent()).toBe("X-Tracet-1");
    expect(await page.textContent("#body")).toBe(JSON.stringify(JSON.parse(payload), null, 2));
    expect(await page.locator("#body .json-key").first().textContent()).toBe('"item"');
    await shot("02-detail-request");
    await page.click('.tabs button[data-part="response"]');
    await page.click('.mode[data-mode="raw"]');
    expect(await page.textContent("#part-raw")).toMatch(/^HTTP\/1\.1 200 OK␍\n/);
    await shot("03-detail-response-raw");
    await page.click('.mode[data-mode="pretty"]');
    await page.click('.tabs button[data-part="request"]');

    // Replay
    const seen = upstream.seen.length;
    await page.click("#replay");
    await poll(() => page.textContent("#replay-note")).toContain("Replayed");
    await poll(() => rows().filter({ hasText: "↻ replay" }).count()).toBe(1);
    expect(upstream.seen.length).toBe(seen + 1);
    expect(upstream.seen.at(-1)).toMatchObject({ method: "POST", url: "/orders/42?debug=1", headers: { "x-trace": "t-1" } });
    expect(await rows().first().textContent()).toContain("/orders/42?debug=1↻ replay");
    await shot("04-replayed");

    // Replay with modifications
    await page.click("#replay-modify");
    await page.locator("#modify").waitFor();
    expect(await page.inputValue("#modify-method")).toBe("POST");
    expect(await page.inputValue("#modify-headers")).toContain("X-Trace: t-1");
    await page.fill("#modify-method", "PUT");
    await page.fill("#modify-uri", "/orders/43");
    await page.fill("#modify-headers", (await page.inputValue("#modify-headers")).replace("X-Trace: t-1", "X-Trace: t-2"));
    await page.fill("#modify-body", '{"item":"pen"}');
    await shot("05-modify");
    await page.click("#modify-send");
    await rows().filter({ hasText: "/orders/43" }).waitFor();
    expect(upstream.seen.at(-1)).toMatchObject({ method: "PUT", url: "/orders/43", headers: { "x-trace": "t-2", "content-length": "14" } });

    // filters
    await page.fill("#filter-path", "orders");
    await poll(() => rows().count()).toBe(3);
    await page.selectOption("#filter-method", "PUT");
    await poll(() => rows().count()).toBe(1);
    await page.selectOption("#filter-method", "");
    await page.fill("#filter-path", "");
    await page.fill("#filter-status", "4xx");
    await poll(() => rows().count()).toBe(0);
    await page.fill("#filter-status", "2xx");
    await poll(() => rows().count()).toBe(4);
    await page.fill("#filter-status", "");
    await shot("06-filtered");

    // status page: the tunnel's metrics from /api/tunnels
    await page.click("#nav-status");
    const tunnelRow = page.locator('#tunnels tr[data-tunnel="web"]');
    await tunnelRow.waitFor();
    await poll(async () => (await tunnelRow.locator("td").allTextContents())[7]).toBe("4");
    expect(await tunnelRow.textContent()).toContain(publicUrl);
    await shot("07-status");
    await page.click("#nav-requests");

    // deleting through the API empties the page (the live feed says so)
    expect((await fetch(`${agent.apiUrl}/api/requests/http`, { method: "DELETE" })).status).toBe(204);
    await poll(() => rows().count()).toBe(0);
    await poll(() => page.isVisible("#empty")).toBe(true);

    // and so does the Clear button
    expect((await fetchPublic(edge.url, publicUrl, "/one-more")).status).toBe(200);
    await rows().filter({ hasText: "/one-more" }).waitFor();
    await page.click("#clear");
    await poll(() => rows().count()).toBe(0);
    await poll(() => page.isVisible("#empty")).toBe(true);
    expect(agent.capture!.size).toBe(0);
    await shot("08-cleared");
  });
});
