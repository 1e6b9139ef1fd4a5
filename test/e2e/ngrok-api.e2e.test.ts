/**
 * The published TypeScript client of the reference API, @ngrok/ngrok-api, against Tollgate's management
 * API served by the Worker under `wrangler dev`: the real `Ngrok` class (`new Ngrok({ apiToken, baseUrl })`)
 * exactly as published — its own HTTP stack (wretch over node-fetch), its own `Ngrok-Version: 2` header, no
 * polyfill replaced and no header added — for every call the API serves: bot users, the two HTTPS edge
 * route modules, the edges and routes of policies/gateway.yaml, tunnels and tunnel sessions (an agent
 * started here), and its errors. One edge for the file.
 *
 * To assert what the client sends (paths, queries, bodies, statuses), most tests point it at a recording
 * pass-through proxy in front of the edge, which forwards every request byte for byte (Host included, so
 * `uri`s name the proxy, the client's base URL) and keeps a copy. The first test uses the edge directly.
 */

import { createHash } from "node:crypto";
import { request as httpRequest, createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { BotUser, EndpointCircuitBreaker, Error as NgrokApiError } from "@ngrok/ngrok-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { AGENT_VERSION } from "../../src/agent/version.ts";
import { ngrokClient } from "../agent/support/ngrok-client.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";
import { DEV_KEY, Edge } from "./support/edge.ts";
import { GATEWAY_ROUTES } from "../shared/gateway-routes.ts";

const EDGE = "edghts_local";
const ROUTE = "edghtsrt_demo";
const BOT_ID = /^bot_[0-9A-Za-z]{27}$/;
const RFC3339_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

// ---- the client, as published ----

const require = createRequire(import.meta.url);
const { Ngrok } = require("@ngrok/ngrok-api") as typeof import("@ngrok/ngrok-api");

/** Every exchange the client made through the proxy: method, URL, request headers as sent, body, answer status. */
const sent: Array<{ method: string; url: string; headers: Record<string, string>; body: string | undefined; status: number }> = [];

/** Forwards every request to `target` unchanged and records it in `sent`. */
async function startRecordingProxy(target: URL): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const body = Buffer.concat(chunks);
      const forwarded = httpRequest(
        { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.rawHeaders },
        (answer) => {
          const headers: Record<string, string> = {};
          for (let i = 0; i < incoming.rawHeaders.length; i += 2) headers[incoming.rawHeaders[i]] = incoming.rawHeaders[i + 1];
          sent.push({
            method: incoming.method ?? "GET",
            url: `${proxyUrl}${incoming.url}`,
            headers,
            body: body.length > 0 ? body.toString("utf8") : undefined,
            status: answer.statusCode ?? 0,
          });
          outgoing.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
          answer.pipe(outgoing);
        },
      );
      forwarded.on("error", () => outgoing.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxyUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url: proxyUrl,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

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
let proxy: { url: string; close(): Promise<void> };
/** The client's base URL in most tests: the recording proxy in front of the edge. */
let base: string;
let ngrok: InstanceType<typeof Ngrok>;

beforeAll(async () => {
  [edge, upstream] = await Promise.all([Edge.start(), startUpstream()]);
  proxy = await startRecordingProxy(new URL(edge.url));
  base = proxy.url;
  ngrok = new Ngrok({ apiToken: DEV_KEY, baseUrl: base });
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
  if (!parsed.ok) throw new Error("bad test config");
  agent = await startAgent({ config: parsed.config, backoff: { initialMs: 100, maxMs: 1000 } });
  await agent.ready;
});

afterAll(async () => {
  await agent?.stop();
  await upstream?.close();
  await proxy?.close();
  await edge?.dispose();
});

describe("@ngrok/ngrok-api (the real Ngrok class) against Tollgate under wrangler dev", () => {
  it("is answered with only its own headers: Ngrok-Version: 2 and no Service-Version", async () => {
    expect(await ngrok.botUsers.list()).toEqual([]);
    const request = sent.at(-1)!;
    expect(request).toMatchObject({ method: "GET", url: `${base}/bot_users?limit=100`, status: 200 });
    expect(request.headers).toMatchObject({
      Authorization: `Bearer ${DEV_KEY}`,
      "Ngrok-Version": "2",
      "Content-Type": "application/json",
      "User-Agent": expect.stringMatching(/^ngrok-api-typescript\//),
    });
    expect(Object.keys(request.headers).map((name) => name.toLowerCase())).not.toContain("service-version");
  });

  it("bot users: create, get, update (id in the body), list across pages with beforeId, delete", async () => {
    const created = await ngrok.botUsers.create({ name: "client-bot" });
    expect(created.id).toMatch(BOT_ID);
    expect(created).toEqual({ id: created.id, uri: `${base}/bot_users/${created.id}`, name: "client-bot", active: true, createdAt: expect.any(String) });
    expect(String(created.createdAt)).toMatch(RFC3339_UTC); // typed Date, delivered as the JSON string
    expect(sent.at(-1)).toMatchObject({ method: "POST", url: `${base}/bot_users`, body: '{"name":"client-bot"}', status: 201 });

    expect(await ngrok.botUsers.get(created.id)).toEqual(created);

    const updated = await ngrok.botUsers.update({ id: created.id, name: "renamed", active: false });
    expect(updated).toEqual({ ...created, name: "renamed", active: false });
    expect(sent.at(-1)).toMatchObject({ method: "PATCH", url: `${base}/bot_users/${created.id}`, status: 200 });
    expect(JSON.parse(sent.at(-1)!.body!)).toEqual({ id: created.id, name: "renamed", active: false });
    expect(await ngrok.botUsers.get(created.id)).toEqual(updated);

    const more: BotUser[] = [];
    for (let i = 0; i < 4; i++) more.push(await ngrok.botUsers.create({ name: `page-${i}`, active: i % 2 === 0 }));
    for (const [i, user] of more.entries()) {
      expect(user.id).toMatch(BOT_ID);
      expect(user).toMatchObject({ name: `page-${i}`, active: i % 2 === 0 });
    }
    const newestFirst = [...more]
      .reverse()
      .map((user) => user.id)
      .concat(created.id);
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
    expect(sent.at(-1)).toMatchObject({ method: "GET", url: `${base}/bot_users/${created.id}`, status: 404 });
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

    const badKey = await rejection(new Ngrok({ apiToken: "tgk_not_a_key", baseUrl: base }).botUsers.list());
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
    expect(sent.at(-1)).toMatchObject({ method: "PUT", url: `${base}${path}`, status: 200 });
    expect(JSON.parse(sent.at(-1)!.body!)).toEqual({ edge_id: EDGE, id: ROUTE, module: { tripped_duration: 30 } });
    expect(await modules.get(route)).toEqual(withDefaults);

    const module: EndpointCircuitBreaker = {
      enabled: false,
      trippedDuration: 20,
      rollingWindow: 60,
      numBuckets: 6,
      volumeThreshold: 0,
      errorThresholdPercentage: 0.75,
    };
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
    expect(sent.at(-1)).toMatchObject({ method: "GET", url: `${base}${path}`, status: 200 });

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
      tunnelSession: { id: sessionId, uri: `${base}/tunnel_sessions/${sessionId}` },
      endpoint: { id: expect.stringMatching(/^ep_[0-9A-Za-z]{27}$/), uri: expect.stringMatching(new RegExp(`^${base}/endpoints/ep_`)) },
      forwardsTo: `http://localhost:${upstream.port}`,
    });
    // second precision: the start may read up to 999 ms before `startedFrom`
    expect(Date.parse(String(detail.startedAt))).toBeGreaterThan(startedFrom - 1000);
    expect(Date.parse(String(detail.startedAt))).toBeLessThanOrEqual(Date.now());
    expect(listed[1]).toEqual(detail);
    expect(listed[0]).toMatchObject({ id: apiId, publicUrl: api.public_url, tunnelSession: { id: sessionId } });
    expect(listed[0].metadata).toBe(""); // always there, "" when none was configured

    expect(await agentApi.stopTunnel("api")).toBe(true);
    const stopped = await rejection(ngrok.tunnels.get(apiId));
    expectEnvelope(stopped, "ERR_SVC_204", 404);
    expect(stopped.details.get("id")).toBe(apiId);
    expect((await ngrok.tunnels.list()).map((tunnel) => tunnel.id)).toEqual([webId]);
  });

  it("tunnel sessions: the agent's session is listed and read in the reference API's shape, and its tunnels name it", async () => {
    const sessionId = agent.session.status.sessionId;
    const firstRequest = sent.length;
    const sessions = await ngrok.tunnelSessions.list(undefined, "1");
    expect(sessions.map((session) => session.id)).toEqual([sessionId]);
    expect(sent.slice(firstRequest).map((request) => [new URL(request.url).pathname + new URL(request.url).search, request.status])).toEqual([
      ["/tunnel_sessions?limit=1", 200],
    ]);
    const session = await ngrok.tunnelSessions.get(sessionId!);
    expect(session).toEqual({
      id: sessionId,
      uri: `${base}/tunnel_sessions/${sessionId}`,
      agentVersion: AGENT_VERSION,
      credential: { id: expect.stringMatching(/^cr_[0-9A-Za-z]{27}$/), uri: expect.stringMatching(new RegExp(`^${base}/credentials/cr_`)) },
      ip: "127.0.0.1",
      metadata: "", // the agent's config has no metadata
      os: `${process.platform}/${process.arch}`,
      region: expect.any(String),
      startedAt: expect.stringMatching(RFC3339_UTC),
      transport: "tollgate/v1",
    });
    expect(sessions[0]).toEqual(session);
    expect(JSON.stringify(session)).not.toContain(createHash("sha256").update(DEV_KEY).digest("hex").slice(0, 16));

    const unknown = await rejection(ngrok.tunnelSessions.get("ts_0000000000000000000000000zz"));
    expectEnvelope(unknown, "ERR_SVC_204", 404);
  });

  it("edges: the HTTPS edge of policies/gateway.yaml with its routes, one route, and the list", async () => {
    const edgeRoutes = GATEWAY_ROUTES.map(([id, match]) => ({ id, match }));
    const port = new URL(base).port;
    const httpsEdge = await ngrok.edges.edgesHttps.get(EDGE);
    expect(httpsEdge).toEqual({
      id: EDGE,
      createdAt: expect.stringMatching(RFC3339_UTC),
      uri: `${base}/edges/https/${EDGE}`,
      hostports: [`127.0.0.1:${port}`, `localhost:${port}`],
      routes: edgeRoutes.map(({ id, match }) => ({
        edgeId: EDGE,
        id,
        createdAt: expect.stringMatching(RFC3339_UTC),
        matchType: "path_prefix",
        match,
        uri: `${base}/edges/https/${EDGE}/routes/${id}`,
      })),
    });
    expect(sent.at(-1)).toMatchObject({ method: "GET", url: `${base}/edges/https/${EDGE}`, status: 200 });
    expect(await ngrok.edges.edgesHttps.list()).toEqual([httpsEdge]);

    // a module set through the client shows on the route
    const module: EndpointCircuitBreaker = {
      enabled: true,
      trippedDuration: 15,
      rollingWindow: 30,
      numBuckets: 3,
      volumeThreshold: 5,
      errorThresholdPercentage: 0.25,
    };
    await ngrok.edgeModules.edgeRouteCircuitBreakerModule.replace({ edgeId: EDGE, id: ROUTE, module });
    const route = await ngrok.edges.edgesHttpsRoutes.get({ edgeId: EDGE, id: ROUTE });
    expect(route).toEqual({ ...httpsEdge.routes[0], circuitBreaker: module });
    expect(sent.at(-1)).toMatchObject({ method: "GET", url: `${base}/edges/https/${EDGE}/routes/${ROUTE}`, status: 200 });
    await deleteAnswered204(
      ngrok.edgeModules.edgeRouteCircuitBreakerModule.delete({ edgeId: EDGE, id: ROUTE }),
      `/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`,
    );

    const unknown = await rejection(ngrok.edges.edgesHttps.get("edghts_nope"));
    expectEnvelope(unknown, "ERR_SVC_204", 404);
  });

  it("used directly against the edge (no proxy, nothing patched), it lists bot users, tunnels and tunnel sessions and gets the edge", async () => {
    const direct = new Ngrok({ apiToken: DEV_KEY, baseUrl: edge.url });
    const before = sent.length;
    const users = await direct.botUsers.list();
    expect(users.length).toBeGreaterThan(0);
    expect(users.every((user) => BOT_ID.test(user.id) && user.uri === `${edge.url}/bot_users/${user.id}`)).toBe(true);
    const tunnels = await direct.tunnels.list();
    expect(tunnels.map((tunnel) => tunnel.id)).toEqual([agent.tunnels.get("web")!.id]);
    expect(tunnels[0]).toMatchObject({ metadata: "e2e-web", tunnelSession: { id: agent.session.status.sessionId } });
    const sessions = await direct.tunnelSessions.list();
    expect(sessions.map((session) => session.id)).toEqual([agent.session.status.sessionId]);
    expect(await direct.tunnelSessions.get(tunnels[0].tunnelSession.id)).toEqual(sessions[0]);
    expect((await direct.edges.edgesHttps.get(EDGE)).routes.map((route) => route.id)).toEqual(GATEWAY_ROUTES.map(([id]) => id));
    expect(sent.length).toBe(before); // none of it went through the proxy
  });
});
