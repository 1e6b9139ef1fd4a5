/**
 * The web inspector in a real browser: headless Chromium (the one test/browser/chromium-choice.ts finds, on
 * x86-64 Linux the @sparticuz/chromium npm package) driven by playwright-core, against the agent and a real
 * edge (`wrangler dev`) and local service, with three tunnels (two to the service, one to a port nothing
 * listens on). Screenshots go to test-artifacts/inspector/ (not committed): empty state, three tunnels with
 * mixed traffic, a failed exchange, a bad modified replay, the status page, and the steps between.
 */

import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { closedPort, startUpstream, type Upstream } from "../support/upstream.ts";
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
let urls: Record<string, string>;

/** Polls patiently: the whole suite shares two cores with workerd. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 15_000, interval: 50 });
const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png` });
const rows = () => page.locator(".request-row");

/** The element's box in the page, to check where things sit (layout, not pixels). */
async function box(selector: string) {
  const found = await page.locator(selector).boundingBox();
  if (!found) throw new Error(`${selector} is not visible`);
  return found;
}

/** Whether an input's placeholder fits inside it, measured with the input's own font. */
const placeholderFits = (selector: string) =>
  page.$eval(selector, (input) => {
    const field = input as HTMLInputElement;
    const style = getComputedStyle(field);
    const context = document.createElement("canvas").getContext("2d")!;
    context.font = style.font;
    const room = field.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return context.measureText(field.placeholder).width <= room;
  });

/** Picked once per run by test/browser/chromium-setup.ts, which says why when there is none. */
const chromium = inject("chromium");

describe.skipIf(chromium.kind === "none")("the inspector page in Chromium", () => {
  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    // Each one is assigned as soon as it is up, so that afterAll stops it even if another fails to start.
    await allStarted(
      Edge.start().then((started) => (edge = started)),
      startUpstream().then((started) => (upstream = started)),
      launchChromium(chromium).then((started) => (browser = started)),
    );
    const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
    if (!parsed.ok) throw new Error("bad test config");
    const down = await closedPort();
    agent = await startAgent({
      config: parsed.config,
      tunnels: [
        { name: "web", definition: { addr: String(upstream.port), inspect: true } },
        { name: "api", definition: { addr: String(upstream.port), inspect: true } },
        { name: "down", definition: { addr: String(down), inspect: true } },
      ],
    });
    const started = await agent.ready;
    urls = Object.fromEntries(started.map((tunnel) => [tunnel.name, tunnel.publicUrl!]));
    publicUrl = urls.web;
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

  it("shows a request live, opens it, replays it as is and modified, filters, shows tunnel status, and clears", async () => {
    await page.goto(`${agent.apiUrl}/`);
    await poll(() => page.textContent("#live")).toBe("live");
    await poll(() => page.isVisible("#empty")).toBe(true);

    // the first screen: the hint in the middle of the list pane, and the right pane saying where to send a request
    const pane = await box(".list-pane");
    const empty = await box("#empty .empty-title");
    expect(empty.y + empty.height / 2).toBeLessThan(pane.y + pane.height * 0.7);
    expect(empty.y).toBeGreaterThan(pane.y + pane.height * 0.3);
    expect(await page.textContent("#placeholder-title")).toBe("Waiting for the first request");
    await poll(() => page.locator("#placeholder-urls a").count()).toBe(3);
    expect(await page.locator("#placeholder-urls a").evaluateAll((links) => links.map((link) => link.getAttribute("href")).sort())).toEqual(
      Object.values(urls).sort(),
    );
    expect(await placeholderFits("#filter-status")).toBe(true);
    expect(await placeholderFits("#filter-path")).toBe(true);
    await shot("01-empty");

    // a real browser request through the tunnel (Chromium resolves *.localhost), and a JSON POST from Node
    const visitor = await browser.newPage();
    await visitor.route("**/favicon.ico", (route) => route.fulfill({ status: 204 })); // one request per visit
    const visit = await visitor.goto(`${publicUrl}/welcome?from=browser`);
    expect(visit?.status()).toBe(200);
    await visitor.close();
    const payload = JSON.stringify({ item: "book", qty: 2, tags: ["a", "b"] });
    expect(
      (
        await fetchPublic(edge.url, publicUrl, "/orders/42?debug=1", {
          method: "POST",
          body: payload,
          headers: { "content-type": "application/json", "x-trace": "t-1" },
        })
      ).status,
    ).toBe(200);

    // the same GET / on three tunnels, a 404 and a 500, and one the local service never answers
    for (const name of ["web", "api", "down"]) await fetchPublic(edge.url, urls[name], "/");
    expect((await fetchPublic(edge.url, urls.api, "/status/404")).status).toBe(404);
    expect((await fetchPublic(edge.url, urls.api, "/status/500")).status).toBe(500);

    const order = rows().filter({ hasText: "/orders/42?debug=1" });
    await order.waitFor();
    await poll(() => order.locator(".status-badge").textContent()).toBe("200");
    await poll(() => rows().count()).toBe(7);
    expect(await rows().filter({ hasText: "/welcome?from=browser" }).count()).toBe(1);
    // three GET / told apart by their tunnel; every row has its time
    const roots = rows().filter({ has: page.locator(".path", { hasText: /^\/$/ }) });
    expect((await roots.locator(".tunnel").allTextContents()).sort()).toEqual(["api", "down", "web"]);
    for (const time of await rows().locator("time").allTextContents()) expect(time).toMatch(/^\d\d:\d\d:\d\d\.\d{3}$/);
    await poll(() => roots.filter({ hasText: "down" }).locator(".status-badge").textContent()).toBe("error");
    expect(await page.textContent("#placeholder-title")).toBe("Select a request to see it here");
    await shot("02-three-tunnels");

    // the tunnel filter offers every tunnel
    expect(await page.locator("#filter-tunnel option").allTextContents()).toEqual(["any tunnel", "api", "down", "web"]);
    await page.selectOption("#filter-tunnel", "api");
    await poll(() => rows().count()).toBe(3);
    expect(new Set(await rows().locator(".tunnel").allTextContents())).toEqual(new Set(["api"]));
    await page.selectOption("#filter-tunnel", "");
    await poll(() => rows().count()).toBe(7);

    // a failed exchange: the request as it was, and instead of an empty response, why there is none
    await roots.filter({ hasText: "down" }).click();
    await poll(() => page.textContent("#detail-title")).toBe("GET / → failed");
    expect(await page.isVisible("#part-pretty")).toBe(true);
    await page.click('.tabs button[data-part="response"]');
    expect(await page.textContent("#missing-title")).toBe("The local service could not be reached");
    expect(await page.textContent("#missing-detail")).toMatch(/^could not connect to http:\/\/localhost:\d+: .+ \(upstream_unreachable\)$/);
    expect(await page.textContent("#missing-text")).toContain("The public client got a 502 from the edge.");
    expect(await page.isVisible("#part-pretty")).toBe(false);
    expect(await page.isVisible("#modes")).toBe(false);
    expect(await page.isVisible("#part-raw")).toBe(false);
    await shot("03-failed-exchange");
    await page.click('.tabs button[data-part="request"]');

    // the detail: summary, headers, pretty-printed JSON body, raw bytes
    await order.click();
    await poll(() => page.textContent("#detail-title")).toBe("POST /orders/42?debug=1 → 200 OK");
    expect(await page.textContent("#detail-summary")).toContain("tunnelweb");
    expect(await page.locator("#headers tr", { hasText: "X-Trace" }).textContent()).toBe("X-Tracet-1");
    expect(await page.textContent("#body")).toBe(JSON.stringify(JSON.parse(payload), null, 2));
    expect(await page.locator("#body .json-key").first().textContent()).toBe('"item"');
    await shot("04-detail-request");
    await page.click('.tabs button[data-part="response"]');
    await page.click('.mode[data-mode="raw"]');
    expect(await page.textContent("#part-raw")).toMatch(/^HTTP\/1\.1 200 OK␍\n/);
    await shot("05-detail-response-raw");
    await page.click('.mode[data-mode="pretty"]');
    await page.click('.tabs button[data-part="request"]');

    // Replay
    const seen = upstream.seen.length;
    await page.click("#replay");
    await poll(() => page.textContent("#replay-note")).toContain("Replayed");
    await poll(() => rows().filter({ hasText: "↻ replay" }).count()).toBe(1);
    expect(upstream.seen.length).toBe(seen + 1);
    expect(upstream.seen.at(-1)).toMatchObject({ method: "POST", url: "/orders/42?debug=1", headers: { "x-trace": "t-1" } });
    expect(await rows().first().locator(".path").textContent()).toBe("/orders/42?debug=1");
    expect(await rows().first().locator(".replay").textContent()).toBe("↻ replay");
    await shot("06-replayed");

    // Replay with modifications
    await page.click("#replay-modify");
    await page.locator("#modify").waitFor();
    expect(await page.inputValue("#modify-method")).toBe("POST");
    expect(await page.inputValue("#modify-headers")).toContain("X-Trace: t-1");
    await page.fill("#modify-method", "PUT");
    await page.fill("#modify-uri", "/orders/43");
    await page.fill("#modify-headers", (await page.inputValue("#modify-headers")).replace("X-Trace: t-1", "X-Trace: t-2"));
    await page.fill("#modify-body", '{"item":"pen"}');
    await shot("07-modify");

    // a bad modification: the agent's reason once, under the form, the field marked; nothing sent
    const before = upstream.seen.length;
    await page.fill("#modify-method", "PU T");
    await page.click("#modify-send");
    await poll(() => page.textContent("#modify-error")).toBe("Not sent: invalid replay request: request.method: must be an HTTP method token");
    expect(await page.getAttribute("#modify-method", "aria-invalid")).toBe("true");
    expect(await page.getAttribute("#modify-uri", "aria-invalid")).toBeNull();
    expect(await page.isVisible("#modify")).toBe(true);
    expect(upstream.seen.length).toBe(before);
    await shot("08-bad-modified-replay");
    await page.fill("#modify-method", "PUT");
    await page.click("#modify-send");
    await rows().filter({ hasText: "/orders/43" }).waitFor();
    expect(upstream.seen.at(-1)).toMatchObject({ method: "PUT", url: "/orders/43", headers: { "x-trace": "t-2", "content-length": "14" } });

    // filters
    expect(await page.isVisible("#modify-error")).toBe(false);
    await page.fill("#filter-path", "orders");
    await poll(() => rows().count()).toBe(3);
    await page.selectOption("#filter-method", "PUT");
    await poll(() => rows().count()).toBe(1);
    await page.selectOption("#filter-method", "");
    await page.fill("#filter-path", "");
    await page.fill("#filter-status", "4xx");
    await poll(() => rows().count()).toBe(1);
    await page.fill("#filter-status", "error");
    await poll(() => rows().count()).toBe(1);
    await page.fill("#filter-status", "2xx");
    await poll(() => rows().count()).toBe(6);
    await page.fill("#filter-status", "3xx");
    await poll(() => page.isVisible("#no-match")).toBe(true);
    await shot("09-filtered-none");
    await page.click("#reset-filters");
    await poll(() => rows().count()).toBe(9);
    expect(await page.inputValue("#filter-status")).toBe("");

    // status page: the tunnel's metrics from /api/tunnels
    await page.click("#nav-status");
    const tunnelRow = page.locator('#tunnels tr[data-tunnel="web"]');
    await tunnelRow.waitFor();
    await poll(async () => (await tunnelRow.locator("td").allTextContents())[7]).toBe("5");
    expect(await tunnelRow.locator(`a[href="${publicUrl}"]`).textContent()).toBe(publicUrl);
    expect(await page.locator("#tunnels a").count()).toBe(3);
    await shot("10-status");
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
    await shot("11-cleared");
  });
});
