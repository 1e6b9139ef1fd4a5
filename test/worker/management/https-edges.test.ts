/** `/edges/https`: the edges and routes of policies/gateway.yaml, read-only, in the reference API's shapes. */

import { describe, expect, it } from "vitest";
import { ORIGIN, RFC3339_UTC, call, callError, callJson } from "./helpers.ts";
import { API_ROUTE_INDEX, GATEWAY_ROUTES } from "../../shared/gateway-routes.ts";

const EDGE = "edghts_local";

interface HttpsEdgeRoute {
  edge_id: string;
  id: string;
  created_at: string;
  match_type: string;
  match: string;
  uri: string;
  circuit_breaker?: Record<string, unknown>;
  websocket_tcp_converter?: { enabled: boolean };
}

interface HttpsEdge {
  id: string;
  created_at: string;
  uri: string;
  hostports: string[];
  routes: HttpsEdgeRoute[];
}

interface HttpsEdgeList {
  https_edges: HttpsEdge[];
  uri: string;
  next_page_uri: string | null;
}

function route(id: string, match: string, createdAt: string): HttpsEdgeRoute {
  return { edge_id: EDGE, id, created_at: createdAt, match_type: "path_prefix", match, uri: `${ORIGIN}/edges/https/${EDGE}/routes/${id}` };
}

describe("HTTPS edges of policies/gateway.yaml", () => {
  it("GET /edges/https lists the edge with its host names (on the request's port) and routes in config order", async () => {
    const list = await callJson<HttpsEdgeList>("GET", "/edges/https", 200);
    expect(list.uri).toBe(`${ORIGIN}/edges/https`);
    expect(list.next_page_uri).toBeNull();
    expect(list.https_edges.map((edge) => edge.id)).toEqual([EDGE]);
    const [edge] = list.https_edges;
    expect(edge.created_at).toMatch(RFC3339_UTC);
    expect(edge).toEqual({
      id: EDGE,
      created_at: edge.created_at,
      uri: `${ORIGIN}/edges/https/${EDGE}`,
      hostports: ["127.0.0.1:80", "localhost:80"],
      routes: GATEWAY_ROUTES.map(([id, match], index) => route(id, match, edge.routes[index].created_at)),
    });
    for (const listed of edge.routes) expect(listed.created_at).toMatch(RFC3339_UTC);
  });

  it("created_at is when the API first showed the edge or route, and stays so", async () => {
    const first = await callJson<HttpsEdge>("GET", `/edges/https/${EDGE}`, 200);
    const again = await callJson<HttpsEdge>("GET", `/edges/https/${EDGE}`, 200);
    expect(again).toEqual(first);
    const viaRoute = await callJson<HttpsEdgeRoute>("GET", `/edges/https/${EDGE}/routes/edghtsrt_api`, 200);
    expect(viaRoute.created_at).toBe(first.routes[API_ROUTE_INDEX].created_at);
  });

  it("GET /edges/https/{id} and …/routes/{id} show the route's stored modules, and omit those it does not have", async () => {
    const path = `/edges/https/${EDGE}/routes/edghtsrt_api`;
    await call("DELETE", `${path}/circuit_breaker`);
    await callJson("PUT", `${path}/websocket_tcp_converter`, 200, { json: { enabled: false } });
    const breaker = await callJson<Record<string, unknown>>("PUT", `${path}/circuit_breaker`, 200, { json: { tripped_duration: 30 } });

    const shown = await callJson<HttpsEdgeRoute>("GET", path, 200);
    expect(shown).toEqual({ ...route("edghtsrt_api", "/", shown.created_at), circuit_breaker: breaker, websocket_tcp_converter: { enabled: false } });
    const edge = await callJson<HttpsEdge>("GET", `/edges/https/${EDGE}`, 200);
    expect(edge.routes[API_ROUTE_INDEX]).toEqual(shown);

    await call("DELETE", `${path}/circuit_breaker`);
    await call("DELETE", `${path}/websocket_tcp_converter`);
    const bare = await callJson<HttpsEdgeRoute>("GET", path, 200);
    expect(Object.keys(bare).sort()).toEqual(["created_at", "edge_id", "id", "match", "match_type", "uri"]);
  });

  it("an unknown edge or route → 404 ERR_SVC_204 naming it; the edges are read-only", async () => {
    expect((await callError("GET", "/edges/https/edghts_nope", 404, 204, {}, "'edghts_nope'")).details.edge_id).toBe("edghts_nope");
    expect((await callError("GET", `/edges/https/edghts_nope/routes/edghtsrt_api`, 404, 204)).details.edge_id).toBe("edghts_nope");
    const unknownRoute = await callError("GET", `/edges/https/${EDGE}/routes/edghtsrt_nope`, 404, 204);
    expect(unknownRoute.details).toMatchObject({ edge_id: EDGE, route_id: "edghtsrt_nope" });
    await callError("POST", "/edges/https", 405, 205, { json: {} });
    await callError("PATCH", `/edges/https/${EDGE}`, 405, 205, { json: {} });
    await callError("DELETE", `/edges/https/${EDGE}/routes/edghtsrt_api`, 405, 205);
  });

  it("pagination: limit bounds (400 ERR_SVC_233), before_id must read as an edge id (400 ERR_SVC_215), and pages by id", async () => {
    await callError("GET", "/edges/https?limit=0", 400, 233);
    await callError("GET", "/edges/https?limit=101", 400, 233);
    const bad = await callError("GET", `/edges/https?before_id=${encodeURIComponent("not an id!")}`, 400, 215, {}, "an edge id");
    expect(bad.details.field).toBe("before_id");
    expect((await callJson<HttpsEdgeList>("GET", `/edges/https?before_id=${EDGE}`, 200)).https_edges).toEqual([]);
    expect((await callJson<HttpsEdgeList>("GET", "/edges/https?beforeId=zzz&limit=1", 200)).https_edges.map((edge) => edge.id)).toEqual([EDGE]);
  });

  it("another account sees no edges: an empty list, and 404 for the edge and its routes", async () => {
    expect(await callJson<HttpsEdgeList>("GET", "/edges/https", 200, { key: "other" })).toEqual({
      https_edges: [],
      uri: `${ORIGIN}/edges/https`,
      next_page_uri: null,
    });
    await callError("GET", `/edges/https/${EDGE}`, 404, 204, { key: "other" });
    await callError("GET", `/edges/https/${EDGE}/routes/edghtsrt_api`, 404, 204, { key: "other" });
  });
});
