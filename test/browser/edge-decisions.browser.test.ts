/**
 * Requests the edge answered itself, in the web inspector in Chromium: a tunnel with a rate limit under
 * `wrangler dev`, the real agent, a real local service. A 429 at the edge shows in the list marked "at edge"
 * and opens on its decision panel (entry, action, bucket key, retry-after, RateLimit fields); a relayed request
 * shows the decision it passed. Screenshots go to test-artifacts/edge-decisions/ (not committed).
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

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/edge-decisions/", import.meta.url));

let edge: Edge;
let upstream: Upstream;
let agent: Agent;
let browser: Browser;
let page: Page;

const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 15_000, interval: 50 });
const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png` });

const chromium = inject("chromium");

const policy = {
  inbound: [
    {
      name: "one per client",
      actions: [
        {
          type: "rate-limit",
          config: { name: "per-client", algorithm: "sliding_window", capacity: 1, rate: "60s", bucket_key: ["req.headers['x-client'][0]"] },
        },
      ],
    },
  ],
};

describe.skipIf(chromium.kind === "none")("edge decisions in the inspector, in Chromium", () => {
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
      tunnels: [{ name: "web", definition: { addr: String(upstream.port), inspect: true, traffic_policy: policy } }],
    });
    await agent.ready;
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

  it("shows an edge-decided 429 marked at edge, with its decision panel, and the relayed request's decision", async () => {
    const publicUrl = agent.tunnels.list()[0].publicUrl!;
    await page.goto(`${agent.apiUrl}/`);
    await poll(() => page.textContent("#live")).toBe("live");
    const headers = { "x-client": "carol" };
    expect((await fetchPublic(edge.url, publicUrl, "/orders", { headers })).status).toBe(200);
    expect((await fetchPublic(edge.url, publicUrl, "/orders?page=2", { headers })).status).toBe(429);

    const limitedRow = page.locator(".request-row", { hasText: "/orders?page=2" });
    await poll(() => limitedRow.count()).toBe(1);
    await poll(() => limitedRow.locator(".at-edge").textContent()).toBe("at edge · rate-limit");
    expect(await limitedRow.locator(".status-badge").textContent()).toContain("429");
    await shot("1-list-with-edge-429");

    await limitedRow.click();
    await poll(() => page.textContent("#detail-title")).toContain("/orders?page=2 → 429");
    await poll(() => page.isVisible("#decisions")).toBe(true);
    const summary = await page.textContent("#detail-summary");
    expect(summary).toContain('at the edge by inbound[0] "one per client", action 0 (rate-limit); it never reached the local service');
    const cells = await page.locator("#decisions tbody tr td").allTextContents();
    expect(cells.slice(0, 5)).toEqual(["per-client", "limited", "carol", "true", expect.stringMatching(/^\d+ s$/)]);
    expect(cells[6]).toContain('RateLimit-Policy: "per-client";q=1;w=60');
    await shot("2-edge-429-decision-panel");

    await page.locator(".request-row", { hasText: "/orders" }).filter({ hasNotText: "page=2" }).click();
    await poll(() => page.textContent("#detail-title")).toContain("/orders → 200");
    const relayed = await page.locator("#decisions tbody tr td").allTextContents();
    expect(relayed.slice(0, 4)).toEqual(["per-client", "allowed", "carol", "false"]);
    expect(await page.textContent("#detail-summary")).not.toContain("at the edge");
    await shot("3-relayed-request-decision-panel");
  });
});
