/**
 * When what stands behind the gateway fails (a tunnel's agent or local service, a busy session, an origin, an
 * open circuit), a browser gets an HTML page and API clients keep the JSON envelope, status and headers.
 */

import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, inject, it } from "vitest";
import { ERROR_PAGE_CSP } from "../../src/error-page.ts";
import { BreakerMemory } from "../../src/breaker/breaker-memory.ts";
import { withCircuitBreaker } from "../../src/gateway/modules/breaker-client.ts";
import { ResetCode, type FrameOf } from "../../src/relay/index.ts";
import { MAX_SESSION_STREAMS } from "../../src/tunnels/stream-limits.ts";
import { send, singleEdge } from "./gateway/harness.ts";
import { type FakeAgent, keptAliveTunnels, publicFetch } from "./tunnels/fake-agent.ts";

const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const API = "application/json";
/** Ceiling for a hundred requests to reach the agent on a busy machine (not a speed requirement). */
const HEADS_WITHIN_MS = 25_000;

const tunnels = keptAliveTunnels();
afterEach(() => tunnels.closeAll());

async function tunnel() {
  const { agent, tunnel: started } = await tunnels.start();
  return { agent, url: started.public_url!, host: new URL(started.public_url!).host };
}

/** The page's status, headers and text; the headers that keep it inert are asserted here. */
async function page(response: Response, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(response.headers.get("cache-control")).toBe("no-store");
  expect(response.headers.get("content-security-policy")).toBe(ERROR_PAGE_CSP);
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  const operationId = response.headers.get("x-operation-id");
  expect(operationId).toMatch(/^op_/);
  const html = await response.text();
  expect(html).toContain(`<code>${operationId}</code>`);
  return html;
}

/** The JSON answer as before: its status, no page headers, and the envelope with the header's operation id. */
async function envelope(response: Response, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/json");
  expect(response.headers.get("content-security-policy")).toBeNull();
  expect(response.headers.get("cache-control")).toBeNull();
  return { operationId: response.headers.get("x-operation-id"), body: await response.json() };
}

/** Two public requests the agent holds: one from a browser, one from an API client. */
async function heldPair(agent: FakeAgent, url: string) {
  const browser = publicFetch(url, "/from-browser", { headers: { accept: BROWSER } });
  const browserHead = await agent.next("request_head", (head) => head.target === "/from-browser");
  const api = publicFetch(url, "/from-api", { headers: { accept: API } });
  const apiHead = await agent.next("request_head", (head) => head.target === "/from-api");
  return { browser, api, heads: [browserHead, apiHead] as const };
}

function reset(agent: FakeAgent, head: FrameOf<"request_head">, code: string, message: string): void {
  agent.send({ type: "reset", stream: head.stream, code, message });
}

describe("a tunnel that cannot answer", { timeout: 60_000 }, () => {
  it("502 ERR_SVC_8012 (the local service is not answering): a page for a browser, the envelope for an API client", async () => {
    const { agent, url, host } = await tunnel();
    const { browser, api, heads } = await heldPair(agent, url);
    for (const head of heads) reset(agent, head, ResetCode.upstreamUnreachable, "connect ECONNREFUSED 127.0.0.1:3000");

    const html = await page(await browser, 502);
    expect(html).toContain('<p class="status">502 Bad Gateway</p>');
    expect(html).toContain("<h1>The tunnel&#39;s local service did not answer</h1>");
    expect(html).toContain("<code>ERR_SVC_8012</code>");
    expect(html).toContain("connect ECONNREFUSED 127.0.0.1:3000");
    expect(html).toContain("If this is your tunnel: start your local service");

    const { operationId, body } = await envelope(await api, 502);
    expect(body).toEqual({
      error_code: "ERR_SVC_8012",
      status_code: 502,
      msg: "The tunnel agent could not get an answer from its local service: connect ECONNREFUSED 127.0.0.1:3000",
      details: { host, reason: "upstream_unreachable", operation_id: operationId },
    });
  });

  it("502 ERR_SVC_3004 (the agent's session ended mid-request): a page for a browser, the envelope for an API client", async () => {
    const { agent, url, host } = await tunnel();
    const { browser, api } = await heldPair(agent, url);
    agent.close();

    const html = await page(await browser, 502);
    expect(html).toContain("<h1>The tunnel&#39;s agent did not finish the response</h1>");
    expect(html).toContain("<code>ERR_SVC_3004</code>");
    expect(html).toContain("If this is your tunnel: check that the agent is still running");

    const { operationId, body } = await envelope(await api, 502);
    expect(body).toEqual({
      error_code: "ERR_SVC_3004",
      status_code: 502,
      msg: "The tunnel agent did not complete the response: the agent closed its session",
      details: { host, reason: "agent_disconnected", operation_id: operationId },
    });
  });

  it("503 ERR_SVC_716 when the agent refuses a stream: a page with retry-after for a browser, the envelope for an API client", async () => {
    const { agent, url, host } = await tunnel();
    const { browser, api, heads } = await heldPair(agent, url);
    for (const head of heads) reset(agent, head, ResetCode.tooManyStreams, "the agent is serving 256 streams at once, the most it takes");

    const browserAnswer = await browser;
    expect(browserAnswer.headers.get("retry-after")).toBe("1");
    const html = await page(browserAnswer, 503);
    expect(html).toContain("<h1>This tunnel is busy</h1>");
    expect(html).toContain("<code>ERR_SVC_716</code>");

    const apiAnswer = await api;
    expect(apiAnswer.headers.get("retry-after")).toBe("1");
    const { operationId, body } = await envelope(apiAnswer, 503);
    expect(body).toEqual({
      error_code: "ERR_SVC_716",
      status_code: 503,
      msg: `Tunnel ${host} is busy: the agent is serving 256 streams at once, the most it takes. Try again in a moment.`,
      details: { host, reason: "too_many_streams", operation_id: operationId },
    });
  });

  it(`503 ERR_SVC_716 past ${MAX_SESSION_STREAMS} streams at the edge: a page for a browser, the envelope for an API client`, async () => {
    const { agent, url, host } = await tunnel();
    const pending = Array.from({ length: MAX_SESSION_STREAMS }, (_, i) => publicFetch(url, `/held/${i}`));
    const heads: Array<FrameOf<"request_head">> = [];
    for (let i = 0; i < MAX_SESSION_STREAMS; i++) heads.push(await agent.next("request_head", () => true, HEADS_WITHIN_MS));

    const browserAnswer = await publicFetch(url, "/one-too-many", { headers: { accept: BROWSER } });
    expect(browserAnswer.headers.get("retry-after")).toBe("1");
    const html = await page(browserAnswer, 503);
    expect(html).toContain("<h1>This tunnel is busy</h1>");
    expect(html).toContain(`carrying ${MAX_SESSION_STREAMS} requests at once`);

    const apiAnswer = await publicFetch(url, "/one-too-many", { headers: { accept: API } });
    expect(apiAnswer.headers.get("retry-after")).toBe("1");
    const { operationId, body } = await envelope(apiAnswer, 503);
    expect(body).toEqual({
      error_code: "ERR_SVC_716",
      status_code: 503,
      msg: `Tunnel ${host} is busy: its agent's session is carrying ${MAX_SESSION_STREAMS} requests at once, the most it takes. Try again in a moment.`,
      details: { host, reason: "too_many_streams", limit: MAX_SESSION_STREAMS, operation_id: operationId },
    });

    for (const head of heads) reset(agent, head, ResetCode.cancelled, "test over");
    await Promise.all(pending.map(async (each) => (await each).body?.cancel()));
  });
});

describe("an origin that cannot answer", () => {
  const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;
  const routes = singleEdge(`
      - { id: dead, match: /dead, upstream: "http://127.0.0.1:9" }
      - { id: slow, match: /slow, upstream: "${upstream}" }
      - { id: tcp, match: /socket, upstream: "tcp://127.0.0.1:9" }
`);

  it("502 ERR_SVC_302 (unreachable): a page for a browser, the envelope for an API client", async () => {
    const html = await page(await send(routes, new Request("http://gw.test/dead/x", { headers: { accept: BROWSER } })), 502);
    expect(html).toContain("<h1>The server behind this address could not be reached</h1>");
    expect(html).toContain("<code>ERR_SVC_302</code>");
    expect(html).toContain("The upstream http://127.0.0.1:9 could not be reached");

    const { operationId, body } = await envelope(await send(routes, new Request("http://gw.test/dead/x", { headers: { accept: API } })), 502);
    expect(body).toMatchObject({ error_code: "ERR_SVC_302", status_code: 502, details: { operation_id: operationId } });
    expect(Object.keys(body as object)).toEqual(["error_code", "status_code", "msg", "details"]);
    expect((body as { msg: string }).msg).toMatch(/^The upstream http:\/\/127\.0\.0\.1:9 could not be reached: /);
  });

  it("504 ERR_SVC_304 (no answer within UPSTREAM_TIMEOUT_MS): a page for a browser, the envelope for an API client", async () => {
    const timeout = { UPSTREAM_TIMEOUT_MS: "100" };
    const html = await page(await send(routes, new Request("http://gw.test/slow/delay/1500", { headers: { accept: BROWSER } }), timeout), 504);
    expect(html).toContain('<p class="status">504 Gateway Timeout</p>');
    expect(html).toContain("<h1>The server behind this address took too long</h1>");
    expect(html).toContain("<code>ERR_SVC_304</code>");

    const { operationId, body } = await envelope(await send(routes, new Request("http://gw.test/slow/delay/1500"), timeout), 504);
    expect(body).toEqual({
      error_code: "ERR_SVC_304",
      status_code: 504,
      msg: `The upstream ${upstream} did not answer within 100ms.`,
      details: { operation_id: operationId },
    });
  });

  it("502 ERR_SVC_302 on a tcp:// route without its converter: a page for a browser, the envelope for an API client", async () => {
    const html = await page(await send(routes, new Request("http://gw.test/socket", { headers: { accept: BROWSER } })), 502);
    expect(html).toContain("<h1>This address serves WebSocket clients only</h1>");
    expect(html).toContain("enable the route&#39;s websocket_tcp_converter module");

    const { operationId, body } = await envelope(await send(routes, new Request("http://gw.test/socket", { headers: { accept: "*/*" } })), 502);
    expect(body).toEqual({
      error_code: "ERR_SVC_302",
      status_code: 502,
      msg: "This route's upstream is tcp://127.0.0.1:9; enable its websocket_tcp_converter module to bridge WebSockets to it.",
      details: { operation_id: operationId },
    });
  });
});

describe("an open circuit breaker", () => {
  const spec = { trippedMs: 60_000, rollingWindowMs: 10_000, numBuckets: 10, volumeThreshold: 4, errorThresholdPercentage: 0.5 };

  /** Calls through the route's circuit the way the pipeline does, the client's request passed along. */
  async function through(memory: BreakerMemory, ingress: string, request: Request): Promise<Response> {
    const ctx = createExecutionContext();
    const response = await withCircuitBreaker(
      { env, memory, afterResponse: ctx },
      { ingress, label: "r", spec },
      async () => new Response("boom", { status: 500 }),
      request,
    );
    await waitOnExecutionContext(ctx);
    return response;
  }

  it("503 ERR_SVC_303: a page with retry-after for a browser, the envelope for an API client", async () => {
    const memory = new BreakerMemory({ now: () => 1_700_000_000_000 });
    const ingress = `pages-${Math.random().toString(36).slice(2, 10)}`;
    for (let i = 0; i < spec.volumeThreshold; i++) expect((await through(memory, ingress, new Request("http://gw.test/"))).status).toBe(500);

    const browserAnswer = await through(memory, ingress, new Request("http://gw.test/", { headers: { accept: BROWSER } }));
    expect(browserAnswer.headers.get("retry-after")).toBe("60");
    expect(browserAnswer.headers.get("x-tollgate-circuit")).toBe("open");
    const html = await page(browserAnswer, 503);
    expect(html).toContain("<h1>This service is pausing after errors</h1>");
    expect(html).toContain("<code>ERR_SVC_303</code>");
    expect(html).toContain("Try again in 60 seconds.");

    const apiAnswer = await through(memory, ingress, new Request("http://gw.test/", { headers: { accept: API } }));
    expect(apiAnswer.headers.get("retry-after")).toBe("60");
    expect(apiAnswer.headers.get("x-tollgate-circuit")).toBe("open");
    const { operationId, body } = await envelope(apiAnswer, 503);
    expect(body).toEqual({
      error_code: "ERR_SVC_303",
      status_code: 503,
      msg: "The circuit breaker of route r is open after too many upstream errors; the upstream is not called. Retry after 60s.",
      details: { circuit: "open", retry_after: 60, operation_id: operationId },
    });
  });
});
