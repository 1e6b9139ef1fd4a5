/** `${…}` interpolation and set-vars through the Worker's pipeline in workerd, against a real local upstream. */

import { describe, expect, inject, it } from "vitest";
import { ExpressionErrorLog } from "../../../src/policy/expression-error-log.ts";
import { newIsolate, send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;

function route(policy: string) {
  return singleEdge(`      - { id: r, match: /, upstream: ${upstream}, traffic_policy: p.yaml }\n`, { "policies/p.yaml": policy });
}

/** What the upstream saw: its echo of the request. */
async function seen(response: Response): Promise<{ url: string; headers: Record<string, string> }> {
  expect(response.status).toBe(200);
  return (await response.json()) as { url: string; headers: Record<string, string> };
}

describe("interpolation through the gateway", () => {
  it("ngrok's add-headers example: x-client-ip: ${conn.client_ip} arrives upstream interpolated", async () => {
    const routes = route(`
on_http_request:
  - actions:
      - type: add-headers
        config:
          headers:
            X-Client-IP: "\${conn.client_ip}"
            X-Request-Path: "\${req.url.path}"
`);
    const response = await send(routes, new Request("http://gw.test/echo/orders?x=1", { headers: { "cf-connecting-ip": "203.0.113.50" } }));
    const { headers } = await seen(response);
    expect(headers["x-client-ip"]).toBe("203.0.113.50");
    expect(headers["x-request-path"]).toBe("/echo/orders");
  });

  it("a client's header cannot add a header line upstream", async () => {
    const routes = route(`
on_http_request:
  - actions:
      - type: add-headers
        config:
          headers:
            x-echo: "\${req.url.query}\${'\\\\r\\\\nx-admin: 1'}"
`);
    const { headers } = await seen(await send(routes, new Request("http://gw.test/echo/?q=%0D%0Ax-injected:1")));
    expect(headers["x-echo"]).toBe("q=%0D%0Ax-injected:1x-admin: 1");
    expect(headers["x-admin"]).toBeUndefined();
    expect(headers["x-injected"]).toBeUndefined();
  });

  it("custom-response interpolates its body and headers", async () => {
    const routes = route(`
on_http_request:
  - expressions: ["req.url.path == '/api/example'"]
    actions:
      - type: custom-response
        config:
          status_code: 418
          body: '{"client":"\${conn.client_ip}","method":"\${req.method}"}'
          headers:
            content-type: application/json
            x-path: "\${req.url.path}"
`);
    const response = await send(routes, new Request("http://gw.test/api/example", { headers: { "cf-connecting-ip": "198.51.100.2" } }));
    expect(response.status).toBe(418);
    expect(response.headers.get("x-path")).toBe("/api/example");
    expect(await response.json()).toEqual({ client: "198.51.100.2", method: "GET" });
  });

  it("set-vars, then a later expression and header read the variable", async () => {
    const routes = route(`
on_http_request:
  - actions:
      - type: set-vars
        config:
          vars:
            - tier: "\${req.headers['x-plan'][0] == 'gold' ? 'premium' : 'basic'}"
            - limit: 100
  - expressions: ["vars.tier == 'premium' && vars.limit > 10"]
    actions:
      - type: add-headers
        config:
          headers:
            x-tier: "\${vars.tier}/\${vars.limit}"
`);
    const gold = await seen(await send(routes, new Request("http://gw.test/echo/", { headers: { "x-plan": "gold" } })));
    expect(gold.headers["x-tier"]).toBe("premium/100");
    const plain = await seen(await send(routes, new Request("http://gw.test/echo/", { headers: { "x-plan": "free" } })));
    expect(plain.headers["x-tier"]).toBeUndefined();
  });

  it("variables belong to their phase: the response phase does not see the request phase's", async () => {
    const routes = route(`
on_http_request:
  - actions:
      - type: set-vars
        config: { vars: [ { who: inbound } ] }
on_http_response:
  - actions:
      - type: add-headers
        config: { headers: { x-has-who: "\${has(vars.who)}" } }
`);
    const response = await send(routes, new Request("http://gw.test/echo/"));
    expect(response.headers.get("x-has-who")).toBe("false");
    await response.body?.cancel();
  });

  it("an expression failing at request time sends empty text and logs once a second, never failing the request", async () => {
    const routes = route(`
on_http_request:
  - actions:
      - type: add-headers
        config:
          headers:
            x-token: "t=\${req.headers['x-missing'][0]}"
`);
    const now = () => 1_700_000_000_000;
    const lines: string[] = [];
    const isolate = { ...newIsolate(now), expressionErrors: new ExpressionErrorLog({ now, write: (line) => lines.push(line) }) };
    for (let i = 0; i < 3; i++) {
      const { headers } = await seen(await send(routes, new Request("http://gw.test/echo/"), {}, undefined, isolate));
      expect(headers["x-token"]).toBe("t=");
    }
    expect(lines).toEqual([
      `traffic policy: \${req.headers['x-missing'][0]} in inbound[0].actions[0].config.headers.x-token failed (field not found: x-missing); it is written as empty text`,
    ]);
  });
});
