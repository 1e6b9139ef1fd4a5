/**
 * The inspector's simulation view in Chromium, against the agent, a real edge (`wrangler dev`) and a local
 * service: requests captured through a tunnel whose policy lets them all pass, then a stricter candidate pasted in
 * and run over all of them and over two picked in the list, each shown next to what really happened. Screenshots
 * go to test-artifacts/inspector/ (not committed).
 */

import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";
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

const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 15_000, interval: 50 });
const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
const resultRows = () => page.locator("#sim-results tbody tr");

/** Per API key, ten a minute: the traffic captured below all passes it. */
const LIVE_POLICY = {
  inbound: [{ actions: [{ type: "rate-limit", config: { name: "per-key", capacity: 10, rate: "60s", bucket_key: ["req.headers['x-api-key']"] } }] }],
};
const CANDIDATE = `inbound:
  - name: per key
    actions:
      - type: rate-limit
        config:
          name: per-key
          capacity: 2
          rate: 60s
          bucket_key: ["req.headers['x-api-key']"]
`;

const chromium = inject("chromium");

describe.skipIf(chromium.kind === "none")("the inspector's simulation view in Chromium", () => {
  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    await allStarted(
      Edge.start().then((started) => (edge = started)),
      startUpstream().then((started) => (upstream = started)),
      launchChromium(chromium).then((started) => (browser = started)),
    );
    const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
    if (!parsed.ok) throw new Error("bad test config");
    agent = await startAgent({
      config: parsed.config,
      tunnels: [{ name: "web", definition: { addr: String(upstream.port), inspect: true, traffic_policy: LIVE_POLICY } }],
    });
    const [started] = await agent.ready;
    publicUrl = started!.publicUrl!;
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

  it("runs a stricter candidate over all captured requests and over two picked, next to what really happened", async () => {
    // four requests of key k1 and one of k2, in order, all passed by the tunnel's policy (capacity 10)
    for (const [i, key] of ["k1", "k1", "k2", "k1", "k1"].entries()) {
      expect((await fetchPublic(edge.url, publicUrl, `/items/${i}?key=${key}`, { headers: { "x-api-key": key } })).status).toBe(200);
    }
    await page.goto(`${agent.apiUrl}/`);
    await poll(() => page.locator(".request-row").count()).toBe(5);

    await page.click("#nav-simulate");
    await poll(() => page.textContent("#sim-scope-filter-label")).toBe("all 5 in the current filter");
    expect(await page.isDisabled("#sim-scope-picked")).toBe(true);
    await page.fill("#sim-policy", CANDIDATE);
    await page.click("#sim-run");
    await poll(() => resultRows().count()).toBe(5);
    expect(await page.textContent("#sim-note")).toBe("5 requests, oldest first: 3 same, 2 newly limited.");
    const cells = async () =>
      resultRows().evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll("td")].slice(2, 6).map((cell) => cell.textContent)));
    expect(await cells()).toEqual([
      ["/items/0?key=k1", "200", "200 (passes)", "same"],
      ["/items/1?key=k1", "200", "200 (passes)", "same"],
      ["/items/2?key=k2", "200", "200 (passes)", "same"],
      ["/items/3?key=k1", "200", "429", "newly limited"],
      ["/items/4?key=k1", "200", "429", "newly limited"],
    ]);
    expect(await resultRows().nth(3).locator(".why").textContent()).toMatch(/^inbound\[0\] rate-limit per-key: limited, retry after (59|60) s$/);
    expect(await resultRows().nth(2).locator(".why").textContent()).toBe("inbound[0] rate-limit per-key: allowed, 1 of 2 left in 60 s");
    await shot("12-simulate-all");

    // a candidate that does not load: the located reason, no table
    await page.fill("#sim-policy", CANDIDATE.replace("60s", "65s"));
    await page.click("#sim-run");
    await poll(() => page.textContent("#sim-note")).toBe(
      "Not simulated: the policy does not load: policy:8: inbound[0].actions[0].config.rate: must be a multiple of 10s",
    );
    expect(await page.isVisible("#sim-results")).toBe(false);
    await shot("13-simulate-invalid");

    // pick the two newest k1 requests in the list: alone, each is within the candidate's capacity
    await page.click("#nav-requests");
    for (const path of ["/items/3?key=k1", "/items/4?key=k1"]) await page.locator(".request-row", { hasText: path }).locator(".pick").check();
    expect(await page.isVisible("#detail")).toBe(false); // ticking a box does not open the request
    await shot("14-picked-in-list");
    await page.click("#nav-simulate");
    await poll(() => page.textContent("#sim-scope-picked-label")).toBe("the 2 picked in the list");
    await page.check("#sim-scope-picked");
    await page.fill("#sim-policy", CANDIDATE);
    await page.click("#sim-run");
    await poll(() => page.textContent("#sim-note")).toBe("2 requests, oldest first: 2 same.");
    expect(await cells()).toEqual([
      ["/items/3?key=k1", "200", "200 (passes)", "same"],
      ["/items/4?key=k1", "200", "200 (passes)", "same"],
    ]);
    await shot("15-simulate-picked");
  });
});
