/** A browser gets an HTML page for a tunnel host no agent serves; API clients keep the JSON envelope. */

import { env, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ERROR_PAGE_CSP } from "../../../src/error-page.ts";
import { listOnlineTunnels } from "../../../src/tunnels/registry-client.ts";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

const agents: FakeAgent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

function expectPageHeaders(response: Response): void {
  expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(response.headers.get("cache-control")).toBe("no-store");
  expect(response.headers.get("content-security-policy")).toBe(ERROR_PAGE_CSP);
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  expect(response.headers.get("x-operation-id")).toMatch(/^op_/);
}

describe("a tunnel host no agent serves", () => {
  it("answers a browser 404 with a page naming ERR_SVC_3200, the host and what to do", async () => {
    const response = await SELF.fetch("http://nobodyhome.localhost:8787/some/page", { headers: { accept: BROWSER } });
    expect(response.status).toBe(404);
    expectPageHeaders(response);
    const html = await response.text();
    expect(html).toContain("<h1>This tunnel is offline</h1>");
    expect(html).toContain("<code>ERR_SVC_3200</code>");
    expect(html).toContain("Tunnel nobodyhome.localhost:8787 not found");
    expect(html).toContain("If this is your tunnel: start the agent");
    expect(html).toContain(`<code>${response.headers.get("x-operation-id")}</code>`);
  });

  it.each([
    ["no Accept", undefined],
    ["*/*", "*/*"],
    ["application/json", "application/json"],
    ["JSON above HTML", "text/html;q=0.5, application/json"],
  ])("answers %s with the JSON envelope as before", async (_, accept) => {
    const response = await SELF.fetch("http://nobodyhome.localhost:8787/", accept === undefined ? {} : { headers: { accept } });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("content-security-policy")).toBeNull();
    expect(response.headers.get("cache-control")).toBeNull();
    const body = (await response.json()) as { details: { operation_id: string } };
    expect(body).toEqual({
      error_code: "ERR_SVC_3200",
      status_code: 404,
      msg: "Tunnel nobodyhome.localhost:8787 not found: no agent is online serving this host. Start the agent (tollgate agent http <port>) and use the public URL it prints.",
      details: { host: "nobodyhome.localhost:8787", operation_id: response.headers.get("x-operation-id") },
    });
  });

  it("answers a browser the page once the agent that served the tunnel has gone", async () => {
    const { agent } = await connectAgent();
    agents.push(agent);
    const tunnel = await agent.startOk();
    const served = publicFetch(tunnel.public_url!, "/", { headers: { accept: BROWSER } });
    const head = await agent.next("request_head");
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [["content-type", "text/html"]] });
    agent.send({ type: "end", stream: head.stream, count: 0 });
    expect((await served).status).toBe(200);

    agent.close();
    await vi.waitFor(async () => expect((await listOnlineTunnels(env, "acct_dev")).map((t) => t.id)).not.toContain(tunnel.id), { timeout: 10_000 });
    const response = await publicFetch(tunnel.public_url!, "/", { headers: { accept: BROWSER } });
    expect(response.status).toBe(404);
    expectPageHeaders(response);
    expect(await response.text()).toContain("<code>ERR_SVC_3200</code>");
  });
});
