import { abortAllDurableObjects, env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_EDGE_ACCOUNT, edgeOwnerAccount, getRouteModules } from "../../../src/management/edge-routes.ts";
import { call, callError, callJson } from "./helpers.ts";

const EDGE = "edghts_local";
// The demo route (echo upstream) carries the modules under test, so that once the gateway applies
// modules they never stand between these tests and the management route they call.
const ROUTE = "edghtsrt_demo";
const OTHER_ROUTE = "edghtsrt_api";
const breakerPath = (edge = EDGE, route = ROUTE) => `/edges/https/${edge}/routes/${route}/circuit_breaker`;
const converterPath = (edge = EDGE, route = ROUTE) => `/edges/https/${edge}/routes/${route}/websocket_tcp_converter`;

const DEFAULT_BREAKER = { enabled: true, tripped_duration: 10, rolling_window: 10, num_buckets: 10, volume_threshold: 20, error_threshold_percentage: 0.5 };
const CUSTOM_BREAKER = { enabled: false, tripped_duration: 30, rolling_window: 60, num_buckets: 12, volume_threshold: 5, error_threshold_percentage: 0.25 };

// Cleans up through the store itself: the API's per-key rate limit (120/min) is for the tests' requests.
afterEach(async () => {
  const store = env.ACCOUNT_STORE.getByName("acct_dev");
  for (const route of [ROUTE, OTHER_ROUTE]) {
    for (const kind of ["circuit_breaker", "websocket_tcp_converter"] as const) await store.deleteRouteModule(EDGE, route, kind);
  }
});

describe("edge ownership", () => {
  it("the edges of policies/gateway.yaml belong to acct_dev unless TOLLGATE_EDGE_ACCOUNT says otherwise", () => {
    expect(DEFAULT_EDGE_ACCOUNT).toBe("acct_dev");
    expect(edgeOwnerAccount(env)).toBe("acct_dev");
    expect(edgeOwnerAccount({ ...env, TOLLGATE_EDGE_ACCOUNT: "acct_ops" })).toBe("acct_ops");
    expect(edgeOwnerAccount({ ...env, TOLLGATE_EDGE_ACCOUNT: " " })).toBe("acct_dev");
  });
});

describe("circuit breaker module", () => {
  it("GET before any PUT → 404 that names the module", async () => {
    const envelope = await callError("GET", breakerPath(), 404, 204, {}, /no circuit breaker module/);
    expect(envelope.details).toMatchObject({ edge_id: EDGE, route_id: ROUTE, module: "circuit_breaker" });
  });

  it("PUT a flat body → 200 echoing it; GET returns it", async () => {
    expect(await callJson("PUT", breakerPath(), 200, { json: CUSTOM_BREAKER })).toEqual(CUSTOM_BREAKER);
    expect(await callJson("GET", breakerPath(), 200)).toEqual(CUSTOM_BREAKER);
  });

  it("PUT a body wrapped as {module} (with the path's edge_id and id) is accepted too", async () => {
    const body = { edge_id: EDGE, id: ROUTE, module: CUSTOM_BREAKER };
    expect(await callJson("PUT", breakerPath(), 200, { json: body })).toEqual(CUSTOM_BREAKER);
    expect(await callJson("PUT", breakerPath(), 200, { json: { module: { num_buckets: 3 } } })).toEqual({ ...DEFAULT_BREAKER, num_buckets: 3 });
  });

  it("omitted fields take their defaults (enabled true); PUT replaces rather than merges", async () => {
    expect(await callJson("PUT", breakerPath(), 200, { json: {} })).toEqual(DEFAULT_BREAKER);
    await callJson("PUT", breakerPath(), 200, { json: { num_buckets: 5, enabled: false } });
    expect(await callJson("PUT", breakerPath(), 200, { json: { volume_threshold: 3 } })).toEqual({ ...DEFAULT_BREAKER, volume_threshold: 3 });
  });

  it("DELETE → 204 with no body; GET then 404; DELETE again is still 204", async () => {
    await callJson("PUT", breakerPath(), 200, { json: CUSTOM_BREAKER });
    const deleted = await call("DELETE", breakerPath());
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    await callError("GET", breakerPath(), 404, 204);
    expect((await call("DELETE", breakerPath())).status).toBe(204);
  });

  it("modules are per route", async () => {
    await callJson("PUT", breakerPath(EDGE, OTHER_ROUTE), 200, { json: { num_buckets: 7, enabled: false } });
    await callError("GET", breakerPath(), 404, 204);
    expect(await callJson("GET", breakerPath(EDGE, OTHER_ROUTE), 200)).toMatchObject({ num_buckets: 7 });
  });

  describe("bounds", () => {
    const accepted: Array<[string, number | boolean]> = [
      ["tripped_duration", 1],
      ["tripped_duration", 4_294_967_295],
      ["rolling_window", 1],
      ["rolling_window", 4_294_967_295],
      ["num_buckets", 1],
      ["num_buckets", 128],
      ["volume_threshold", 0],
      ["volume_threshold", 4_294_967_295],
      ["error_threshold_percentage", 0],
      ["error_threshold_percentage", 1],
      ["error_threshold_percentage", 0.001],
      ["enabled", false],
    ];
    for (const [field, value] of accepted) {
      it(`${field} = ${value} is accepted`, async () => {
        expect(await callJson("PUT", breakerPath(), 200, { key: "devSecond", json: { [field]: value } })).toMatchObject({ [field]: value });
      });
    }

    const refused: Array<[string, unknown, string]> = [
      ["tripped_duration", 0, "must be an integer from 1 to 4294967295"],
      ["tripped_duration", 4_294_967_296, "must be an integer from 1 to 4294967295"],
      ["tripped_duration", 1.5, "must be an integer from 1 to 4294967295"],
      ["tripped_duration", "10", "must be an integer from 1 to 4294967295"],
      ["rolling_window", 0, "must be an integer from 1 to 4294967295"],
      ["rolling_window", -5, "must be an integer from 1 to 4294967295"],
      ["num_buckets", 0, "must be an integer from 1 to 128"],
      ["num_buckets", 129, "must be an integer from 1 to 128"],
      ["num_buckets", null, "must be an integer from 1 to 128"],
      ["volume_threshold", -1, "must be an integer from 0 to 4294967295"],
      ["volume_threshold", 4_294_967_296, "must be an integer from 0 to 4294967295"],
      ["error_threshold_percentage", -0.01, "must be a number from 0 to 1"],
      ["error_threshold_percentage", 1.01, "must be a number from 0 to 1"],
      ["error_threshold_percentage", 50, "must be a number from 0 to 1"],
      ["error_threshold_percentage", "0.5", "must be a number from 0 to 1"],
      ["enabled", "yes", "must be true or false"],
    ];
    for (const [field, value, message] of refused) {
      it(`${field} = ${JSON.stringify(value)} → 400 ERR_SVC_215 naming the field, flat or wrapped`, async () => {
        const flat = await callError("PUT", breakerPath(), 400, 215, { key: "devSecond", json: { [field]: value } });
        expect(flat.msg).toBe(`The field '${field}' ${message}.`);
        expect(flat.details.field).toBe(field);
        const wrapped = await callError("PUT", breakerPath(), 400, 215, { key: "devSecond", json: { module: { [field]: value } } });
        expect(wrapped.details.field).toBe(`module.${field}`);
      });
    }
  });

  it("unknown fields → 400 ERR_SVC_214 naming them, inside and outside the wrapper", async () => {
    expect((await callError("PUT", breakerPath(), 400, 214, { json: { num_buckets: 3, buckets: 3 } })).details.field).toBe("buckets");
    expect((await callError("PUT", breakerPath(), 400, 214, { json: { module: { threshold: 1 } } })).details.field).toBe("module.threshold");
    expect((await callError("PUT", breakerPath(), 400, 214, { json: { module: {}, extra: 1 } })).details.field).toBe("extra");
  });

  it("a wrapper that is not an object, or ids that contradict the path → 400 ERR_SVC_215", async () => {
    expect((await callError("PUT", breakerPath(), 400, 215, { json: { module: [1] } })).details.field).toBe("module");
    expect((await callError("PUT", breakerPath(), 400, 215, { json: { module: null } })).details.field).toBe("module");
    expect((await callError("PUT", breakerPath(), 400, 215, { json: { edge_id: "edghts_other", module: {} } })).details.field).toBe("edge_id");
    expect((await callError("PUT", breakerPath(), 400, 215, { json: { id: OTHER_ROUTE, module: {} } })).details.field).toBe("id");
    expect((await callError("PUT", breakerPath(), 400, 215, { json: { id: 5 } })).details.field).toBe("id");
  });

  it("malformed JSON → 400 ERR_SVC_213", async () => {
    await callError("PUT", breakerPath(), 400, 213, { body: "{", headers: { "content-type": "application/json" } });
  });
});

describe("websocket TCP converter module", () => {
  it("GET before any PUT → 404; PUT {} → enabled true; PUT replaces; DELETE → 204; GET → 404", async () => {
    await callError("GET", converterPath(), 404, 204, {}, /no websocket TCP converter module/);
    expect(await callJson("PUT", converterPath(), 200, { json: {} })).toEqual({ enabled: true });
    expect(await callJson("PUT", converterPath(), 200, { json: { enabled: false } })).toEqual({ enabled: false });
    expect(await callJson("GET", converterPath(), 200)).toEqual({ enabled: false });
    expect(await callJson("PUT", converterPath(), 200, { json: { edge_id: EDGE, id: ROUTE, module: { enabled: true } } })).toEqual({ enabled: true });
    const deleted = await call("DELETE", converterPath());
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    await callError("GET", converterPath(), 404, 204);
  });

  it("a non-boolean enabled → 400 ERR_SVC_215; an unknown field → 400 ERR_SVC_214", async () => {
    expect((await callError("PUT", converterPath(), 400, 215, { json: { enabled: "on" } })).details.field).toBe("enabled");
    expect((await callError("PUT", converterPath(), 400, 214, { json: { enabled: true, port: 22 } })).details.field).toBe("port");
  });

  it("is stored independently of the circuit breaker of the same route", async () => {
    await callJson("PUT", converterPath(), 200, { json: {} });
    await callError("GET", breakerPath(), 404, 204);
  });
});

describe("edges and routes of policies/gateway.yaml", () => {
  for (const [method, json] of [
    ["GET", undefined],
    ["PUT", {}],
    ["DELETE", undefined],
  ] as const) {
    it(`${method} on an unknown edge → 404 naming the edge; on an unknown route → 404 naming the route`, async () => {
      for (const path of [breakerPath("edghts_nope"), converterPath("edghts_nope")]) {
        const envelope = await callError(method, path, 404, 204, { json }, "'edghts_nope'");
        expect(envelope.details).toEqual({ edge_id: "edghts_nope", operation_id: envelope.details.operation_id });
      }
      for (const path of [breakerPath(EDGE, "edghtsrt_nope"), converterPath(EDGE, "edghtsrt_nope")]) {
        const envelope = await callError(method, path, 404, 204, { json }, "'edghtsrt_nope'");
        expect(envelope.details).toMatchObject({ edge_id: EDGE, route_id: "edghtsrt_nope" });
      }
    });
  }

  it("an unknown module name is an unknown path", async () => {
    await callError("GET", `/edges/https/${EDGE}/routes/${ROUTE}/compression`, 404, 204);
  });
});

describe("cross-account isolation", () => {
  it("another account does not see the edges, so it cannot read, set or delete their modules", async () => {
    await callJson("PUT", breakerPath(), 200, { json: CUSTOM_BREAKER });
    for (const [method, json] of [
      ["GET", undefined],
      ["PUT", { num_buckets: 1 }],
      ["DELETE", undefined],
    ] as const) {
      await callError(method, breakerPath(), 404, 204, { key: "other", json }, /No HTTPS edge 'edghts_local'/);
    }
    expect(await callJson("GET", breakerPath(), 200)).toEqual(CUSTOM_BREAKER);
  });
});

describe("getRouteModules: what the gateway reads", () => {
  it("returns the edge owner's modules of a route, and nothing once they are deleted", async () => {
    expect(await getRouteModules(env, EDGE, ROUTE)).toEqual({});
    await callJson("PUT", breakerPath(), 200, { json: CUSTOM_BREAKER });
    await callJson("PUT", converterPath(), 200, { json: { enabled: false } });
    expect(await getRouteModules(env, EDGE, ROUTE)).toEqual({ circuit_breaker: CUSTOM_BREAKER, websocket_tcp_converter: { enabled: false } });
    expect(await getRouteModules(env, EDGE, OTHER_ROUTE)).toEqual({});
    expect(await getRouteModules(env, EDGE, ROUTE, "acct_other")).toEqual({});
    await call("DELETE", breakerPath());
    expect(await getRouteModules(env, EDGE, ROUTE)).toEqual({ websocket_tcp_converter: { enabled: false } });
  });

  it("modules survive a restart of the Durable Object", async () => {
    await callJson("PUT", breakerPath(), 200, { json: CUSTOM_BREAKER });
    await abortAllDurableObjects();
    expect(await callJson("GET", breakerPath(), 200)).toEqual(CUSTOM_BREAKER);
    expect((await getRouteModules(env, EDGE, ROUTE)).circuit_breaker).toEqual(CUSTOM_BREAKER);
  });
});
