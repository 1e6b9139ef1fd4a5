/**
 * The published TypeScript client of the reference API, @ngrok/ngrok-api, against Tollgate's management
 * API served by the Worker under `wrangler dev`: the real `Ngrok` class (`new Ngrok({ apiToken, baseUrl })`)
 * with its own HTTP stack (wretch over node-fetch), for every call the API serves — bot users, the two
 * HTTPS edge route modules, tunnels (two started through the agent) — and its errors. One edge for the file.
 *
 * The client sends `Ngrok-Version: 2`; Tollgate requires `Service-Version: 2`. The client's module sets
 * wretch's global fetch polyfill to node-fetch when it loads; after loading it, the tests set that polyfill
 * again, on the very wretch instance the client resolves, to a fetch that adds the header, records the
 * exchange and delegates to the same node-fetch.
 */

import { createRequire } from "node:module";
import type { BotUser, EndpointCircuitBreaker, Error as NgrokApiError } from "@ngrok/ngrok-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { ngrokClient } from "../agent/support/ngrok-client.ts";
import { startUpstream, type Upstream } from "../agent/support/upstream.ts";
import { DEV_KEY, Edge } from "./support/edge.ts";

const EDGE = "edghts_local";
const ROUTE = "edghtsrt_demo";
const BOT_ID = /^bot_[0-9A-Za-z]{27}$/;
const RFC3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

// ---- the client, as published, with Service-Version added around it ----

const require = createRequire(import.meta.url);
const CLIENT_PATH = require.resolve("@ngrok/ngrok-api/lib/client.js");
const { Ngrok } = require("@ngrok/ngrok-api") as typeof import("@ngrok/ngrok-api");

/** What wretch hands its fetch polyfill (headers as a plain object, the body as the serialized string). */
interface WretchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}
type NodeFetch = (url: string, init: WretchInit) => Promise<{ status: number }>;
type WretchFactory = () => { polyfills(polyfills: { fetch: NodeFetch }): unknown };

/** wretch and node-fetch as the client's own module resolves them (so the same global polyfill config). */
const clientRequire = createRequire(CLIENT_PATH);
const wretch = clientRequire("wretch") as WretchFactory;
const nodeFetch = clientRequire("node-fetch") as NodeFetch;

/** Every exchange the client made: method, URL, request headers and body, answer status. */
const sent: Array<{ method: string; url: string; headers: Record<string, string>; body: string | undefined; status: number }> = [];

wretch().polyfills({
  fetch: async (url, init) => {
    const headers = { ...init.headers, "Service-Version": "2" };
    const response = await nodeFetch(url, { ...init, headers });
    sent.push({ method: init.method ?? "GET", url, headers, body: init.body, status: response.status });
    return response;
  },
});

/** The client's rejection for an error answer: the JSON envelope with keys camel-cased and `details` as a Map. */
async function rejection(promise: Promise<unknown>): Promise<NgrokApiError> {
  try {
    await promise;
  } catch (error) {
    return error as NgrokApiError;
  }
  throw new Error("expected the call to reject");
}

/**
 * The client's delete() parses the empty 204 body as JSON and rejects (node-fetch's "invalid json" error,
 * then its own JSON.parse of that message: a SyntaxError) although the server did delete. Asserts exactly
 * that, and that the request was a DELETE of `path` answered 204.
 */
async function deleteAnswered204(promise: Promise<unknown>, path: string): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(SyntaxError);
  const last = sent.at(-1)!;
  expect({ method: last.method, path: new URL(last.url).pathname, status: last.status }).toEqual({ method: "DELETE", path, status: 204 });
}

function expectEnvelope(error: NgrokApiError, errorCode: string, statusCode: number): void {
  expect(error).not.toBeInstanceOf(Error); // the client throws the deserialized body itself
  expect(error).toMatchObject({ errorCode, statusCode, msg: expect.any(String) });
  expect(error.details).toBeInstanceOf(Map);
  expect(error.details.get("operationId")).toMatch(/^op_[0-9A-Za-z]{27}$/);
}

// ---- the edge, an agent with two tunnels ----

let edge: Edge;
let upstream: Upstream;
let agent: Agent;
let ngrok: InstanceType<typeof Ngrok>;

beforeAll(async () => {
  [edge, upstream] = await Promise.all([Edge.start(), startUpstream()]);
  ngrok = new Ngrok({ apiToken: DEV_KEY, baseUrl: edge.url });
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
  if (!parsed.ok) throw new Error("bad test config");
  agent = await startAgent({ config: parsed.config, backoff: { initialMs: 100, maxMs: 1000 } });
  await agent.ready;
});

afterAll(async () => {
  await agent?.stop();
  await upstream?.close();
  await edge?.dispose();
});

describe("@ngrok/ngrok-api (the real Ngrok class) against Tollgate under wrangler dev", () => {
  it("sends its own headers plus Service-Version through the replaced polyfill", async () => {
    expect(await ngrok.botUsers.list()).toEqual([]);
    const request = sent.at(-1)!;
    expect(request).toMatchObject({ method: "GET", url: `${edge.url}/bot_users?limit=100`, status: 200 });
    expect(request.headers).toMatchObject({
      Authorization: `Bearer ${DEV_KEY}`,
      "Ngrok-Version": "2",
      "Service-Version": "2",
      "Content-Type": "application/json",
      "User-Agent": expect.stringMatching(/^ngrok-api-typescript\//),
    });
  });

  it("bot users: create, get, update (id in the body), list across pages with beforeId, delete", async () => {
    const created = await ngrok.botUsers.create({ name: "client-bot" });
    expect(created.id).toMatch(BOT_ID);
    expect(created).toEqual({ id: created.id, uri: `${edge.url}/bot_users/${created.id}`, name: "client-bot", active: true, createdAt: expect.any(String) });
    expect(String(created.createdAt)).toMatch(RFC3339_UTC); // typed Date, delivered as the JSON string
    expect(sent.at(-1)).toMatchObject({ method: "POST", url: `${edge.url}/bot_users`, body: '{"name":"client-bot"}', status: 201 });

    expect(await ngrok.botUsers.get(created.id)).toEqual(created);

    const updated = await ngrok.botUsers.update({ id: created.id, name: "renamed", active: false });
    expect(updated).toEqual({ ...created, name: "renamed", active: false });
    expect(sent.at(-1)).toMatchObject({ method: "PATCH", url: `${edge.url}/bot_users/${created.id}`, status: 200 });
    expect(JSON.parse(sent.at(-1)!.body!)).toEqual({ id: created.id, name: "renamed", active: false });
    expect(await ngrok.botUsers.get(created.id)).toEqual(updated);

    const more: BotUser[] = [];
    for (let i = 0; i < 4; i++) more.push(await ngrok.botUsers.create({ name: `page-${i}`, active: i % 2 === 0 }));
    for (const [i, user] of more.entries()) {
      expect(user.id).toMatch(BOT_ID);
      expect(user).toMatchObject({ name: `page-${i}`, active: i % 2 === 0 });
    }
    const newestFirst = [...more].reverse().map((user) => user.id).concat(created.id);
    expect(new Set(newestFirst).size).toBe(5);

    // pages of 2: three requests, each after the last id of the previous page
    const firstRequest = sent.length;
    const listed = await ngrok.botUsers.list(undefined, "2");
    expect(listed.map((user) => user.id)).toEqual(newestFirst);
    expect(listed.at(-1)).toEqual(updated);
    expect(listed[0]).toEqual(more[3]);
    expect(sent.slice(firstRequest).map((request) => [request.method, new URL(request.url).search, request.status])).toEqual([
      ["GET", "?limit=2", 200],
      ["GET", `?beforeId=${listed[1].id}&limit=2`, 200],
      ["GET", `?beforeId=${listed[3].id}&limit=2`, 200],
    ]);

    // the default page (100) holds them all; a start id lists only older ones
    expect((await ngrok.botUsers.list()).map((user) => user.id)).toEqual(newestFirst);
    expect((await ngrok.botUsers.list(listed[1].id)).map((user) => user.id)).toEqual(newestFirst.slice(2));

    await deleteAnswered204(ngrok.botUsers.delete(created.id), `/bot_users/${created.id}`);
    const gone = await rejection(ngrok.botUsers.get(created.id));
    expectEnvelope(gone, "ERR_SVC_204", 404);
    expect(gone.details.get("id")).toBe(created.id);
    expect(sent.at(-1)).toMatchObject({ method: "GET", url: `${edge.url}/bot_users/${created.id}`, status: 404 });
    expect((await ngrok.botUsers.list()).map((user) => user.id)).toEqual(newestFirst.slice(0, 4));
  });

  it("errors reach the client as the JSON envelope: unknown id, invalid value, unknown field, bad key", async () => {
    const unknownId = "bot_0000000000000000000000000zz";
    const missing = await rejection(ngrok.botUsers.get(unknownId));
    expectEnvelope(missing, "ERR_SVC_204", 404);
    expect(missing.msg).toBe(`No bot user '${unknownId}' exists in this account.`);
    expect(missing.details.get("id")).toBe(unknownId);
    expect(await rejection(ngrok.botUsers.update({ id: unknownId, name: "x" }))).toMatchObject({ errorCode: "ERR_SVC_204", statusCode: 404 });
    expect(await rejection(ngrok.botUsers.delete(unknownId))).toMatchObject({ errorCode: "ERR_SVC_204", statusCode: 404 });

    const invalid = await rejection(ngrok.botUsers.create({ name: "" }));
    expectEnvelope(invalid, "ERR_SVC_215", 400);
    expect(invalid.details.get("field")).toBe("name");

    // the client serializes whatever it is given (camelCase → snake_case): an unknown field is refused
    const unknownField = await rejection(ngrok.botUsers.create({ name: "x", colour: "red" } as Parameters<typeof ngrok.botUsers.create>[0]));
    expectEnvelope(unknownField, "ERR_SVC_214", 400);

    const badKey = await rejection(new Ngrok({ apiToken: "tgk_not_a_key", baseUrl: edge.url }).botUsers.list());
    expectEnvelope(badKey, "ERR_SVC_203", 401);
    expect(sent.at(-1)!.status).toBe(401);
  });

  it("the circuit breaker module: replace (defaults for omitted fields), replace again, get, delete", async () => {
    const modules = ngrok.edgeModules.edgeRouteCircuitBreakerModule;
    const route = { edgeId: EDGE, id: ROUTE };
    const path = `/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`;

    expectEnvelope(await rejection(modules.get(route)), "ERR_SVC_204", 404); // none yet

    const partial: Partial<EndpointCircuitBreaker> = { trippedDuration: 30 };
    const withDefaults = await modules.replace({ ...route, module: partial as EndpointCircuitBreaker });
    expect(withDefaults).toEqual({ enabled: true, trippedDuration: 30, rollingWindow: 10, numBuckets: 10, volumeThreshold: 20, errorThresholdPercentage: 0.5 });
    expect(sent.at(-1)).toMatchObject({ method: "PUT", url: `${edge.url}${path}`, status: 200 });
    expect(JSON.parse(sent.at(-1)!.body!)).toEqual({ edge_id: EDGE, id: ROUTE, module: { tripped_duration: 30 } });
    expect(await modules.get(route)).toEqual(withDefaults);

    const module: EndpointCircuitBreaker = { enabled: false, trippedDuration: 20, rollingWindow: 60, numBuckets: 6, volumeThreshold: 0, errorThresholdPercentage: 0.75 };
    expect(await modules.replace({ ...route, module })).toEqual(module);
    expect(await modules.get(route)).toEqual(module);

    const outOfRange = await rejection(modules.replace({ ...route, module: { ...module, numBuckets: 129 } }));
    expectEnvelope(outOfRange, "ERR_SVC_215", 400);
    expect(outOfRange.details.get("field")).toBe("module.num_buckets");
    expect(await modules.get(route)).toEqual(module); // unchanged

    await deleteAnswered204(modules.delete(route), path);
    const gone = await rejection(modules.get(route));
    expectEnvelope(gone, "ERR_SVC_204", 404);
    expect(gone.details.get("edgeId")).toBe(EDGE);
    expect(gone.details.get("routeId")).toBe(ROUTE);
    await deleteAnswered204(modules.delete(route), path); // also when there is none

    const unknownRoute = await rejection(modules.get({ edgeId: EDGE, id: "edghtsrt_nope" }));
    expectEnvelope(unknownRoute, "ERR_SVC_204", 404);
    expect(unknownRoute.details.get("routeId")).toBe("edghtsrt_nope");
    const unknownEdge = await rejection(modules.replace({ edgeId: "edghts_nope", id: ROUTE, module }));
    expectEnvelope(unknownEdge, "ERR_SVC_204", 404);
    expect(unknownEdge.details.get("edgeId")).toBe("edghts_nope");
  });

  it("the websocket TCP converter module: replace (default enabled), get, delete", async () => {
    const modules = ngrok.edgeModules.edgeRouteWebsocketTcpConverterModule;
    const route = { edgeId: EDGE, id: ROUTE };
    const path = `/edges/https/${EDGE}/routes/${ROUTE}/websocket_tcp_converter`;

    expect(await modules.replace({ ...route, module: {} })).toEqual({ enabled: true });
    expect(JSON.parse(sent.at(-1)!.body!)).toEqual({ edge_id: EDGE, id: ROUTE, module: {} });
    expect(await modules.get(route)).toEqual({ enabled: true });
    expect(await modules.replace({ ...route, module: { enabled: false } })).toEqual({ enabled: false });
    expect(await modules.get(route)).toEqual({ enabled: false });
    expect(sent.at(-1)).toMatchObject({ method: "GET", url: `${edge.url}${path}`, status: 200 });

    await deleteAnswered204(modules.delete(route), path);
    const gone = await rejection(modules.get(route));
    expectEnvelope(gone, "ERR_SVC_204", 404);
    expect(gone.details.get("routeId")).toBe(ROUTE);
  });

  it("tunnels: list (across pages with beforeId) and get the tunnels the agent started; 404 once stopped", async () => {
    const agentApi = ngrokClient(agent.apiUrl!);
    const startedFrom = Math.floor(Date.now() / 1000) * 1000;
    const web = await agentApi.startTunnel({ name: "web", proto: "http", addr: upstream.port, metadata: "e2e-web" });
    const api = await agentApi.startTunnel({ name: "api", proto: "http", addr: upstream.port });
    const webId = agent.tunnels.get("web")!.id;
    const apiId = agent.tunnels.get("api")!.id;
    const sessionId = agent.session.status.sessionId;

    const firstRequest = sent.length;
    const listed = await ngrok.tunnels.list(undefined, "1");
    expect(listed.map((tunnel) => tunnel.id)).toEqual([apiId, webId]); // newest first
    expect(sent.slice(firstRequest).map((request) => [new URL(request.url).search, request.status])).toEqual([
      ["?limit=1", 200],
      [`?beforeId=${apiId}&limit=1`, 200],
    ]);
    expect(await ngrok.tunnels.list()).toEqual(listed);

    const detail = await ngrok.tunnels.get(webId);
    expect(detail).toEqual({
      id: webId,
      publicUrl: web.public_url,
      startedAt: expect.stringMatching(RFC3339_UTC),
      metadata: "e2e-web",
      proto: "http",
      region: expect.any(String),
      tunnelSession: { id: sessionId, uri: `${edge.url}/tunnel_sessions/${sessionId}` },
      endpoint: { id: expect.stringMatching(/^ep_[0-9A-Za-z]{27}$/), uri: expect.stringMatching(new RegExp(`^${edge.url}/endpoints/ep_`)) },
      forwardsTo: `http://localhost:${upstream.port}`,
    });
    // second precision: the start may read up to 999 ms before `startedFrom`
    expect(Date.parse(String(detail.startedAt))).toBeGreaterThan(startedFrom - 1000);
    expect(Date.parse(String(detail.startedAt))).toBeLessThanOrEqual(Date.now());
    expect(listed[1]).toEqual(detail);
    expect(listed[0]).toMatchObject({ id: apiId, publicUrl: api.public_url, tunnelSession: { id: sessionId } });
    expect(listed[0]).not.toHaveProperty("metadata");

    expect(await agentApi.stopTunnel("api")).toBe(true);
    const stopped = await rejection(ngrok.tunnels.get(apiId));
    expectEnvelope(stopped, "ERR_SVC_204", 404);
    expect(stopped.details.get("id")).toBe(apiId);
    expect((await ngrok.tunnels.list()).map((tunnel) => tunnel.id)).toEqual([webId]);
  });
});
