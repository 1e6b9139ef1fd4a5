/**
 * The published TypeScript client of the reference API, @ngrok/ngrok-api, against Tollgate for every call
 * this API serves, through the whole gateway (SELF).
 *
 * The client's entry (`lib/client.js`, the `Ngrok` class) cannot be loaded in workerd: it requires
 * node-fetch → whatwg-url → tr46 → `punycode`, and `require("punycode")` crashes this workerd build
 * (segmentation fault). So the tests use the client's own service classes (`lib/services.js`: every
 * request, query, body and response mapping the `Ngrok` properties run) on an HTTP layer configured as
 * the `Ngrok` constructor configures it (see `ngrokHttpClient`), with a fetch that routes to SELF and adds
 * nothing: the client's own `Ngrok-Version: 2` is accepted as the version header.
 */

import { SELF } from "cloudflare:test";
import * as services from "@ngrok/ngrok-api/lib/services.js";
import wretch from "wretch";
import { beforeAll, describe, expect, it } from "vitest";
import { ORIGIN, RFC3339_UTC } from "./helpers.ts";
import { TEST_KEYS } from "./keys.ts";
import { API_ROUTE_INDEX, GATEWAY_ROUTES } from "../../shared/gateway-routes.ts";

const EDGE = "edghts_local";
const ROUTE = "edghtsrt_demo";

/** What the client sees as requests, for asserting its habits. */
const sent: Array<{ method: string; url: string; body: string }> = [];

beforeAll(() => {
  wretch().polyfills({
    fetch: async (input: RequestInfo, init?: RequestInit) => {
      const request = new Request(input, init);
      const headers = new Headers(request.headers);
      const body = request.body ? await request.text() : "";
      sent.push({ method: request.method, url: request.url, body });
      return SELF.fetch(request.url, { method: request.method, headers, body: body === "" ? undefined : body });
    },
  });
});

/** As in the `Ngrok` constructor of @ngrok/ngrok-api 0.11 (lib/client.js). */
function ngrokHttpClient(apiToken: string, baseUrl: string) {
  return wretch()
    .url(baseUrl)
    .headers({ "User-Agent": "ngrok-api-typescript/0.10.0/test", "Ngrok-Version": "2" })
    .content("application/json")
    .auth(`Bearer ${apiToken}`);
}

/** The parts of an `Ngrok` client this API serves, built from the client's service classes. */
function client(key: keyof typeof TEST_KEYS | { apiToken: string } = "devClient") {
  const http = ngrokHttpClient(typeof key === "string" ? TEST_KEYS[key].key : key.apiToken, ORIGIN);
  return {
    botUsers: new services.BotUsers(http),
    tunnels: new services.Tunnels(http),
    tunnelSessions: new services.TunnelSessions(http),
    edges: { edgesHttps: new services.EdgesHTTPS(http), edgesHttpsRoutes: new services.EdgesHTTPSRoutes(http) },
    edgeModules: {
      edgeRouteCircuitBreakerModule: new services.EdgeRouteCircuitBreakerModule(http),
      edgeRouteWebsocketTcpConverterModule: new services.EdgeRouteWebsocketTCPConverterModule(http),
    },
  };
}

/** The client's rejection: the error envelope with keys camel-cased and details as a Map. */
interface ClientError {
  errorCode: string;
  statusCode: number;
  msg: string;
  details: Map<string, string>;
}

async function rejection(promise: Promise<unknown>): Promise<ClientError> {
  try {
    await promise;
  } catch (error) {
    return error as ClientError;
  }
  throw new Error("expected the call to fail");
}

/** The client's delete() parses the empty 204 body as JSON and throws; the request itself succeeded. */
async function deleteSucceeds(promise: Promise<unknown>): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(SyntaxError);
}

describe("@ngrok/ngrok-api against Tollgate", () => {
  it("bot users: create, get, update (id in the body), list across pages with beforeId, delete", async () => {
    const ngrok = client();
    const created = await ngrok.botUsers.create({ name: "client-bot" });
    expect(created.id).toMatch(/^bot_[0-9A-Za-z]{27}$/);
    expect(created).toMatchObject({ name: "client-bot", active: true, uri: `${ORIGIN}/bot_users/${created.id}` });
    expect(String(created.createdAt)).toMatch(RFC3339_UTC);

    expect(await ngrok.botUsers.get(created.id)).toEqual(created);

    const updated = await ngrok.botUsers.update({ id: created.id, name: "renamed", active: false });
    expect(updated).toEqual({ ...created, name: "renamed", active: false });
    expect(JSON.parse(sent.at(-1)!.body)).toEqual({ id: created.id, name: "renamed", active: false });

    const more = [];
    for (let i = 0; i < 4; i++) more.push(await ngrok.botUsers.create({ name: `page-${i}`, active: i % 2 === 0 }));
    const listed = await ngrok.botUsers.list(undefined, "2");
    expect(listed.map((user) => user.id)).toEqual([...more.reverse(), created].map((user) => user.id));
    const pageRequests = sent.filter((request) => request.method === "GET" && request.url.includes("/bot_users?"));
    expect(pageRequests.map((request) => new URL(request.url).search)).toEqual([
      "?limit=2",
      `?beforeId=${listed[1].id}&limit=2`,
      `?beforeId=${listed[3].id}&limit=2`,
    ]);

    const startingBefore = await ngrok.botUsers.list(listed[0].id);
    expect(startingBefore.map((user) => user.id)).toEqual(listed.slice(1).map((user) => user.id));

    await deleteSucceeds(ngrok.botUsers.delete(created.id));
    const gone = await rejection(ngrok.botUsers.get(created.id));
    expect(gone).toMatchObject({ errorCode: "ERR_SVC_204", statusCode: 404 });
    expect(gone.details).toBeInstanceOf(Map);
    expect(gone.details.get("operationId")).toMatch(/^op_/); // the client camel-cases every key
  });

  it("errors reach the client as its error type: validation, and a bad key", async () => {
    const invalid = await rejection(client().botUsers.create({ name: "" }));
    expect(invalid).toMatchObject({ errorCode: "ERR_SVC_215", statusCode: 400 });
    expect(invalid.details.get("field")).toBe("name");

    const badKey = await rejection(client({ apiToken: "tgk_not_a_key" }).botUsers.list());
    expect(badKey).toMatchObject({ errorCode: "ERR_SVC_203", statusCode: 401 });
  });

  it("the circuit breaker module: replace (wrapped body), get, delete", async () => {
    const modules = client().edgeModules.edgeRouteCircuitBreakerModule;
    const module = { enabled: true, trippedDuration: 20, rollingWindow: 30, numBuckets: 6, volumeThreshold: 15, errorThresholdPercentage: 0.75 };
    expect(await modules.replace({ edgeId: EDGE, id: ROUTE, module })).toEqual(module);
    expect(JSON.parse(sent.at(-1)!.body)).toEqual({
      edge_id: EDGE,
      id: ROUTE,
      module: { enabled: true, tripped_duration: 20, rolling_window: 30, num_buckets: 6, volume_threshold: 15, error_threshold_percentage: 0.75 },
    });
    expect(await modules.get({ edgeId: EDGE, id: ROUTE })).toEqual(module);
    await deleteSucceeds(modules.delete({ edgeId: EDGE, id: ROUTE }));
    expect(await rejection(modules.get({ edgeId: EDGE, id: ROUTE }))).toMatchObject({ errorCode: "ERR_SVC_204", statusCode: 404 });

    const outOfRange = await rejection(modules.replace({ edgeId: EDGE, id: ROUTE, module: { ...module, numBuckets: 129 } }));
    expect(outOfRange).toMatchObject({ errorCode: "ERR_SVC_215", statusCode: 400 });
    expect(outOfRange.details.get("field")).toBe("module.num_buckets");
    const unknownRoute = await rejection(modules.get({ edgeId: EDGE, id: "edghtsrt_nope" }));
    expect(unknownRoute).toMatchObject({ errorCode: "ERR_SVC_204", statusCode: 404 });
  });

  it("the websocket TCP converter module: replace, get, delete", async () => {
    const modules = client().edgeModules.edgeRouteWebsocketTcpConverterModule;
    expect(await modules.replace({ edgeId: EDGE, id: ROUTE, module: { enabled: false } })).toEqual({ enabled: false });
    expect(await modules.get({ edgeId: EDGE, id: ROUTE })).toEqual({ enabled: false });
    await deleteSucceeds(modules.delete({ edgeId: EDGE, id: ROUTE }));
    expect(await rejection(modules.get({ edgeId: EDGE, id: ROUTE }))).toMatchObject({ statusCode: 404 });
  });

  it("tunnel sessions and HTTPS edges: list and get, in the shapes the client maps", async () => {
    const ngrok = client();
    expect(await ngrok.tunnelSessions.list()).toEqual([]); // no agent of this key's account connected here
    const missing = await rejection(ngrok.tunnelSessions.get("ts_0ERbD4CoWXJxTYICGPe8UcyAzR6"));
    expect(missing).toMatchObject({ errorCode: "ERR_SVC_204", statusCode: 404 });

    const edge = await ngrok.edges.edgesHttps.get(EDGE);
    expect(edge).toMatchObject({ id: EDGE, uri: `${ORIGIN}/edges/https/${EDGE}`, hostports: ["127.0.0.1:80", "localhost:80"] });
    expect(edge.routes.map((route) => [route.id, route.matchType, route.match])).toEqual(GATEWAY_ROUTES.map(([id, match]) => [id, "path_prefix", match]));
    expect(await ngrok.edges.edgesHttps.list()).toEqual([edge]);
    expect(await ngrok.edges.edgesHttpsRoutes.get({ edgeId: EDGE, id: "edghtsrt_api" })).toEqual(edge.routes[API_ROUTE_INDEX]);
    expect(sent.at(-1)).toMatchObject({ method: "GET", url: `${ORIGIN}/edges/https/${EDGE}/routes/edghtsrt_api` });
  });

  it("tunnels: list and get read the registry (no agent is connected here, so none are online)", async () => {
    expect(await client().tunnels.list()).toEqual([]);
    const missing = await rejection(client().tunnels.get("tn_0ERbD4CoWXJxTYICGPe8UcyAzR6"));
    expect(missing).toMatchObject({ errorCode: "ERR_SVC_204", statusCode: 404 });
  });
});
