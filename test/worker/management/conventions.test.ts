import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEV_KEY, TEST_KEYS } from "./keys.ts";
import { OPERATION_ID, call, callError, callJson, expectError } from "./helpers.ts";

describe("credentials", () => {
  it("a request without Authorization gets 401 ERR_SVC_200 with www-authenticate", async () => {
    const response = await call("GET", "/bot_users", { key: null });
    expect(response.headers.get("www-authenticate")).toBe('Bearer realm="tollgate"');
    await expectError(response, 401, 200, "no credentials");
  });

  it("an Authorization header that is not 'Bearer <key>' gets 401 ERR_SVC_200", async () => {
    await callError("GET", "/bot_users", 401, 200, { key: null, headers: { authorization: "Basic dXNlcjpwYXNz" } }, "Bearer <API key>");
    await callError("GET", "/bot_users", 401, 200, { key: null, headers: { authorization: "Bearer" } });
  });

  it("an unknown key gets 401 ERR_SVC_203 and the key appears nowhere in the response", async () => {
    const secret = "tgk_wrong_key_that_must_not_be_echoed";
    const response = await call("GET", "/bot_users", { key: null, headers: { authorization: `Bearer ${secret}` } });
    const text = await response.clone().text();
    expect(text).not.toContain(secret);
    expect([...response.headers.values()].join(" ")).not.toContain(secret);
    await expectError(response, 401, 203, "not valid");
  });

  it("a key differing from the development key in its last character is refused", async () => {
    const almost = `${DEV_KEY.slice(0, -1)}1`;
    await callError("GET", "/bot_users", 401, 203, { key: null, headers: { authorization: `Bearer ${almost}` } });
  });

  it("the development key authenticates", async () => {
    await callJson("GET", "/bot_users", 200, { key: "dev" });
  });

  it("the scheme is accepted in any case ('bearer', 'BEARER'); whitespace variants are 401 ERR_SVC_200", async () => {
    for (const authorization of [`bearer ${DEV_KEY}`, `BEARER ${DEV_KEY}`]) {
      await callJson("GET", "/bot_users", 200, { key: null, headers: { authorization } });
    }
    for (const authorization of [`Bearer  ${DEV_KEY}`, `Bearer\t${DEV_KEY}`, `bearer\t${DEV_KEY}`]) {
      await callError("GET", "/bot_users", 401, 200, { key: null, headers: { authorization } }, "one space");
    }
  });

  it("two keys of one account see the same data", async () => {
    const created = await callJson<{ id: string }>("POST", "/bot_users", 201, { key: "dev", json: { name: "shared" } });
    const seen = await callJson<{ id: string }>("GET", `/bot_users/${created.id}`, 200, { key: "devSecond" });
    expect(seen.id).toBe(created.id);
  });

  it("credentials are checked before the version header and the path", async () => {
    await callError("GET", "/nowhere", 401, 200, { key: null, version: null });
  });
});

describe("Service-Version header", () => {
  it("missing → 400 ERR_SVC_218 naming the header", async () => {
    const envelope = await callError("GET", "/bot_users", 400, 218, { version: null }, /Service-Version/);
    expect(envelope.details.header).toBe("Service-Version");
  });

  it("Ngrok-Version: 2 (what the reference API's clients send) is accepted in its place", async () => {
    await callJson("GET", "/bot_users", 200, { version: null, headers: { "ngrok-version": "2" } });
    await callJson("GET", "/bot_users", 200, { version: "2", headers: { "ngrok-version": "2" } });
  });

  it("an Ngrok-Version other than 2 → 400 ERR_SVC_217 naming that header, also beside Service-Version: 2", async () => {
    for (const version of [null, "2"]) {
      const envelope = await callError("GET", "/bot_users", 400, 217, { version, headers: { "ngrok-version": "3" } }, /^Ngrok-Version '3' is not supported/);
      expect(envelope.details.header).toBe("Ngrok-Version");
    }
    const envelope = await callError("GET", "/bot_users", 400, 217, { version: "1", headers: { "ngrok-version": "2" } }, /^Service-Version '1'/);
    expect(envelope.details.header).toBe("Service-Version");
  });

  it("any value other than 2 → 400 ERR_SVC_217 naming the supported version", async () => {
    for (const version of ["1", "3", "2.0", "v2"]) {
      const envelope = await callError("GET", "/bot_users", 400, 217, { version }, /supported version is 2/);
      expect(envelope.details.supported_versions).toEqual(["2"]);
    }
  });
});

describe("paths and methods", () => {
  it("an unknown path → 404 ERR_SVC_204", async () => {
    await callError("GET", "/nope", 404, 204, {}, "/nope");
    await callError("GET", "/bot_users/bot_0ERbD4CoWXJxTYICGPe8UcyAzR6/extra", 404, 204);
  });

  it("a known path with a method it does not serve → 405 ERR_SVC_205 with allow", async () => {
    const response = await call("PUT", "/bot_users", { json: { name: "x" } });
    expect(response.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
    await expectError(response, 405, 205, /PUT is not allowed/);
    await callError("POST", "/bot_users/bot_0ERbD4CoWXJxTYICGPe8UcyAzR6", 405, 205, { json: {} });
    await callError("POST", "/tunnels", 405, 205);
    await callError("PATCH", "/edges/https/edghts_local/routes/edghtsrt_api/circuit_breaker", 405, 205, { json: {} });
  });
});

describe("JSON bodies", () => {
  it("malformed JSON → 400 ERR_SVC_213", async () => {
    await callError("POST", "/bot_users", 400, 213, { body: '{"name": "x",', headers: { "content-type": "application/json" } }, /not valid JSON/);
  });

  it("an empty body or a body that is not an object → 400 ERR_SVC_213", async () => {
    await callError("POST", "/bot_users", 400, 213, { body: "", headers: { "content-type": "application/json" } }, /empty/);
    await callError("POST", "/bot_users", 400, 213, { json: [{ name: "x" }] }, /JSON object/);
    await callError("POST", "/bot_users", 400, 213, { json: "x" }, /JSON object/);
  });

  it("a body sent as another media type → 415 ERR_SVC_212", async () => {
    await callError("POST", "/bot_users", 415, 212, { body: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } });
    await callError("POST", "/bot_users", 415, 212, { body: '{"name":"x"}' }, /Content-Type: application\/json/);
  });

  it("a JSON body without Content-Type is read as JSON", async () => {
    const created = await callJson<{ name: string }>("POST", "/bot_users", 201, { body: new Blob(['{"name":"no-type"}']) });
    expect(created.name).toBe("no-type");
  });

  it("'application/json; charset=utf-8' is JSON", async () => {
    await callJson("POST", "/bot_users", 201, { body: '{"name":"utf8"}', headers: { "content-type": "application/json; charset=utf-8" } });
  });

  it("an unknown field → 400 ERR_SVC_214 naming the field", async () => {
    const envelope = await callError("POST", "/bot_users", 400, 214, { json: { name: "x", colour: "blue" } }, "'colour'");
    expect(envelope.details.field).toBe("colour");
  });

  it("a wrong type → 400 ERR_SVC_215 naming the field", async () => {
    const envelope = await callError("POST", "/bot_users", 400, 215, { json: { name: 42 } }, "The field 'name' must be a string.");
    expect(envelope.details.field).toBe("name");
  });

  it("a body larger than 64 KiB → 400 ERR_SVC_213", async () => {
    await callError("POST", "/bot_users", 400, 213, { json: { name: "x".repeat(70_000) } }, /larger than/);
  });
});

describe("operation ids", () => {
  it("every response, success or error, carries an op_ id in x-operation-id", async () => {
    const ok = await call("GET", "/bot_users");
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-operation-id")).toMatch(OPERATION_ID);
    await ok.text();
    const a = await callError("GET", "/nope", 404, 204);
    const b = await callError("GET", "/nope", 404, 204);
    expect(a.details.operation_id).not.toBe(b.details.operation_id);
  });
});

describe("OpenAPI", () => {
  it("GET /openapi.json is an OpenAPI 3.1 document of every operation, served without credentials", async () => {
    const response = await SELF.fetch("http://127.0.0.1/openapi.json");
    expect(response.status).toBe(200);
    const document = (await response.json()) as {
      openapi: string;
      servers: Array<{ url: string }>;
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }> }>>;
      components: { schemas: Record<string, { properties?: Record<string, { minimum?: number; maximum?: number }>; additionalProperties?: boolean }> };
    };
    expect(document.openapi).toBe("3.1.0");
    expect(document.servers).toEqual([{ url: "http://127.0.0.1" }]);
    const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(operations.sort()).toEqual(
      [
        "POST /bot_users",
        "GET /bot_users",
        "GET /bot_users/{id}",
        "PATCH /bot_users/{id}",
        "DELETE /bot_users/{id}",
        "POST /service_users",
        "GET /service_users",
        "GET /service_users/{id}",
        "PATCH /service_users/{id}",
        "DELETE /service_users/{id}",
        "PUT /edges/https/{edge_id}/routes/{id}/circuit_breaker",
        "GET /edges/https/{edge_id}/routes/{id}/circuit_breaker",
        "DELETE /edges/https/{edge_id}/routes/{id}/circuit_breaker",
        "PUT /edges/https/{edge_id}/routes/{id}/websocket_tcp_converter",
        "GET /edges/https/{edge_id}/routes/{id}/websocket_tcp_converter",
        "DELETE /edges/https/{edge_id}/routes/{id}/websocket_tcp_converter",
        "GET /tunnels",
        "GET /tunnels/{id}",
        "GET /tunnel_sessions",
        "GET /tunnel_sessions/{id}",
        "GET /edges/https",
        "GET /edges/https/{id}",
        "GET /edges/https/{edge_id}/routes/{id}",
        "POST /rate_limit_overrides",
        "GET /rate_limit_overrides",
        "GET /rate_limit_overrides/{id}",
        "PATCH /rate_limit_overrides/{id}",
        "DELETE /rate_limit_overrides/{id}",
        "GET /edges/https/{edge_id}/routes/{id}/rate_limit_buckets",
        "GET /tunnels/{id}/rate_limit_buckets",
        "POST /traffic_policy_simulations",
      ].sort(),
    );
    // Generated from the validating schemas: bounds and strictness show up.
    const breaker = document.components.schemas.CircuitBreakerModule;
    expect(breaker.properties?.num_buckets).toMatchObject({ minimum: 1, maximum: 128 });
    expect(breaker.additionalProperties).toBe(false);
    const parameters = document.paths["/bot_users"].get.parameters ?? [];
    expect(parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "limit", in: "query" }),
        expect.objectContaining({ name: "before_id", in: "query" }),
        expect.objectContaining({ name: "Service-Version", in: "header" }),
        expect.objectContaining({ name: "Ngrok-Version", in: "header" }),
      ]),
    );
    // ngrok deprecated bot users in favor of service users: the same store, documented under both names.
    expect(Object.keys(document.components.schemas.ServiceUserList.properties ?? {}).sort()).toEqual(["next_page_uri", "service_users", "uri"]);
    expect(Object.keys(document.components.schemas.BotUserList.properties ?? {}).sort()).toEqual(["bot_users", "next_page_uri", "uri"]);
    const deprecated = (path: string) => Object.values(document.paths[path]).map((method) => (method as { deprecated?: boolean }).deprecated ?? false);
    expect(deprecated("/bot_users/{id}")).toEqual([true, true, true]);
    expect(deprecated("/service_users/{id}")).toEqual([false, false, false]);
  });
});

describe("rate limit of the committed management policy", () => {
  it("the 121st request within a minute with one key gets 429 ERR_SVC_226 with retry-after", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 120; i++) {
      const response = await call("GET", "/nope", { key: "devFlood" });
      statuses.push(response.status);
      await response.text();
    }
    // Never more than 120 served; leased admissions that expire unused may refuse a few early (never late).
    expect(statuses.filter((status) => status !== 404 && status !== 429)).toEqual([]);
    expect(statuses.filter((status) => status === 404).length).toBeGreaterThan(0);
    const limited = await call("GET", "/bot_users", { key: "devFlood" });
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(61);
    const envelope = await expectError(limited, 429, 226);
    expect(JSON.stringify(envelope)).not.toContain(TEST_KEYS.devFlood.key);
    // The same key with its scheme spelled otherwise is the same bucket…
    expect((await call("GET", "/bot_users", { key: null, headers: { authorization: `bEaReR\t${TEST_KEYS.devFlood.key}` } })).status).toBe(429);
    // …another key of the same account has its own.
    await callJson("GET", "/bot_users", 200, { key: "devSecond" });
  });
});
