/**
 * CEL variables through the Worker: ngrok's "rate limit an endpoint" example with req.url as a string,
 * the req.url fields beside it, and conn.* / endpoint.* read from request.cf and the route.
 */

import { describe, expect, it } from "vitest";
import { send, singleEdge } from "./harness.ts";

const ROUTE = "      - { id: r, match: /, upstream: echo, traffic_policy: p.yaml }\n";

function request(path: string, init: RequestInit<IncomingRequestCfProperties> & { ip?: string } = {}): Request {
  return new Request(`https://gw.test${path}`, {
    ...init,
    headers: { "cf-connecting-ip": init.ip ?? "198.51.100.7", ...(init.headers as Record<string, string>) },
  });
}

async function statuses(routes: ReturnType<typeof singleEdge>, count: number, make: () => Request): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await send(routes, make());
    out.push(response.status);
    await response.body?.cancel();
  }
  return out;
}

describe("req.url as ngrok defines it", () => {
  it("ngrok's 'rate limit an endpoint': req.url.contains(...) limits that endpoint and no other", async () => {
    // As in ngrok's docs (traffic-policy examples, "Rate limit an endpoint"), with Tollgate's duration syntax.
    const routes = singleEdge(ROUTE, {
      "policies/p.yaml": [
        "on_http_request:",
        "  - expressions:",
        "      - \"req.url.contains('/api/specific_endpoint')\"",
        "    actions:",
        "      - type: rate-limit",
        "        config:",
        "          name: Only allow 3 requests per minute",
        "          algorithm: sliding_window",
        "          capacity: 3",
        "          rate: 60s",
        "          bucket_key: [conn.client_ip]",
        "",
      ].join("\n"),
    });
    expect(await statuses(routes, 4, () => request("/api/specific_endpoint?x=1"))).toEqual([200, 200, 200, 429]);
    expect(await statuses(routes, 4, () => request("/api/other"))).toEqual([200, 200, 200, 200]);
  });

  it("req.url's fields keep working beside the string form, in comprehensions and has()", async () => {
    const routes = singleEdge(ROUTE, {
      "policies/p.yaml": [
        "on_http_request:",
        "  - expressions:",
        "      - \"req.url.startsWith('https://gw.test/') && req.url.path == '/admin' && req.url.scheme == 'https'\"",
        "      - \"req.url.query_params.exists(k, k == 'debug') && !has(req.url.port)\"",
        "    actions:",
        "      - type: custom-response",
        "        config: { status_code: 403, body: no }",
        "",
      ].join("\n"),
    });
    expect(await statuses(routes, 1, () => request("/admin?debug=1"))).toEqual([403]);
    expect(await statuses(routes, 1, () => request("/admin"))).toEqual([200]);
    expect(await statuses(routes, 1, () => request("/other?debug=1"))).toEqual([200]);
  });
});

describe("conn.* and endpoint.* in the Worker", () => {
  const gate = (expression: string) =>
    singleEdge(ROUTE, {
      "policies/p.yaml": `on_http_request:\n  - expressions: [${JSON.stringify(expression)}]\n    actions:\n      - type: custom-response\n        config: { status_code: 299, body: matched }\n`,
    });

  it("geolocation and TLS come from request.cf", async () => {
    const routes = gate("conn.geo.country_code == 'DE' && conn.client_ip.geo.location.is_eu && conn.tls.version == '1.3' && conn.client_ip.as.number == 3320");
    const cf = { country: "DE", isEUCountry: "1", tlsVersion: "TLSv1.3", asn: 3320 } as IncomingRequestCfProperties;
    expect(await statuses(routes, 1, () => request("/", { cf }))).toEqual([299]);
    expect(await statuses(routes, 1, () => request("/", { cf: { ...cf, country: "US", isEUCountry: undefined } as IncomingRequestCfProperties }))).toEqual([
      200,
    ]);
  });

  it("without request.cf (workerd tests, a request Cloudflare cannot place) the fields are empty, not errors", async () => {
    const routes = gate("conn.geo.country_code == '' && conn.tls.cipher_suite == '' && !conn.client_ip.geo.location.is_eu");
    expect(await statuses(routes, 1, () => request("/"))).toEqual([299]);
  });

  it("endpoint names the route and the address it was reached at", async () => {
    const routes = gate("endpoint.id.startsWith('route:') && endpoint.host == 'gw.test' && endpoint.port == 443 && endpoint.url == 'https://gw.test'");
    expect(await statuses(routes, 1, () => request("/x"))).toEqual([299]);
  });
});
