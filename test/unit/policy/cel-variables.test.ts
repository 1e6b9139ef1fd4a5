/** The values of every variable family at request time, and that costly ones are read only when an expression reads them. */

import { afterEach, describe, expect, it, vi } from "vitest";
import { activation } from "../../../src/policy/cel-activation.ts";
import { compileExpression, compileValueExpression } from "../../../src/policy/cel.ts";
import { EvaluationBudget } from "../../../src/policy/evaluation-budget.ts";
import type { ConnectionFacts, Exchange } from "../../../src/policy/exchange.ts";
import { MAX_COOKIES } from "../../../src/policy/variables/cookies.ts";
import { MAX_QUERY_PARAMS } from "../../../src/policy/variables/url.ts";
import { makeExchange, type ExchangeOptions } from "../support/exchange.ts";

function holds(source: string, exchange: Exchange = makeExchange()): boolean | { error: string } {
  const compiled = compileExpression(source, exchange.response ? "outbound" : "inbound");
  if (!compiled.ok) throw new Error(`does not compile: ${compiled.message}`);
  return compiled.expression.evaluate(exchange);
}

function evaluated(source: string, exchange: Exchange = makeExchange()) {
  const compiled = compileValueExpression(source, "inbound");
  if (!compiled.ok) throw new Error(`does not compile: ${compiled.message}`);
  return compiled.expression.evaluate(exchange);
}

const at = (url: string, options: ExchangeOptions = {}) => makeExchange({ ...options, url });

describe("req.url: a string, as in ngrok, whose parts stay readable", () => {
  const exchange = () => at("https://user:pw@api.example.test:8443/api/v1/users?limit=5&tag=a&tag=b");

  it("is the normalized full URL, usable with string functions", () => {
    expect(evaluated("req.url", exchange())).toBe("https://user:pw@api.example.test:8443/api/v1/users?limit=5&tag=a&tag=b");
    expect(holds("req.url.contains('/api/v1')", exchange())).toBe(true);
    expect(holds("req.url.startsWith('https://')", exchange())).toBe(true);
    expect(holds("req.url == 'https://a.test/'", at("https://a.test"))).toBe(true);
  });

  it("has the fields ngrok documents", () => {
    const fields = evaluated(
      "[req.url.scheme, req.url.host, req.url.authority, req.url.path, req.url.raw_path, req.url.query, req.url.uri, req.url.user_password, req.url.raw]",
      exchange(),
    );
    expect([...(fields as Iterable<unknown>)]).toEqual([
      "https",
      "api.example.test",
      "user:pw@api.example.test:8443",
      "/api/v1/users",
      "/api/v1/users",
      "limit=5&tag=a&tag=b",
      "/api/v1/users?limit=5&tag=a&tag=b",
      "user:pw",
      "/api/v1/users?limit=5&tag=a&tag=b",
    ]);
    expect(evaluated("req.url.port", exchange())).toBe(8443n);
    expect(holds("req.url.query_params['tag'] == ['a', 'b'] && 'limit' in req.url.query_params", exchange())).toBe(true);
  });

  it("works in comprehensions and has(), also when a local shadows req", () => {
    expect(holds("req.url.query_params.exists(name, name == 'tag')", exchange())).toBe(true);
    expect(holds("['/api', '/admin'].exists(p, req.url.path.startsWith(p))", exchange())).toBe(true);
    expect(holds("has(req.url.port) && has(req.url.query_params) && has(req.url.path)", exchange())).toBe(true);
    expect(holds("has(req.url.port)", at("https://a.test/"))).toBe(false);
    expect(holds("[{'url': {'path': 'x'}}].all(req, req.url.path == 'x')", exchange())).toBe(true);
  });

  it("an absent port indexed is an evaluation error, as any absent key", () => {
    expect(holds("req.url.port == 443", at("https://a.test/"))).toEqual({ error: expect.any(String) });
  });

  it(`holds at most ${MAX_QUERY_PARAMS} query parameters; getQueryParam still sees every one`, () => {
    const query = Array.from({ length: MAX_QUERY_PARAMS + 50 }, (_, i) => `p${i}=${i}`).join("&");
    const hostile = at(`https://a.test/?${query}`);
    expect(evaluated("size(req.url.query_params)", hostile)).toBe(BigInt(MAX_QUERY_PARAMS));
    expect(holds(`getQueryParam('p${MAX_QUERY_PARAMS + 10}') == ['${MAX_QUERY_PARAMS + 10}']`, hostile)).toBe(true);
  });

  it("collecting the query parameters is charged to the request's budget: past it, the expression fails", () => {
    const query = Array.from({ length: 200 }, (_, i) => `p${i}=${"v".repeat(100)}`).join("&");
    const exchange = at(`https://a.test/?${query}`, { budget: new EvaluationBudget({ celWork: 10_000, regexWork: 1, logBytes: 1 }) });
    expect(holds("has(req.url.query_params.p1)", exchange)).toEqual({ error: expect.stringContaining("units of work per request") });
  });
});

describe("req.content_length and req.user_agent", () => {
  it("content_length is the Content-Length header as an int, absent when the request names none", () => {
    expect(holds("req.content_length > 10000000", makeExchange({ headers: { "content-length": "20000000" } }))).toBe(true);
    expect(holds("has(req.content_length)", makeExchange())).toBe(false);
    expect(holds("has(req.content_length)", makeExchange({ headers: { "content-length": "99999999999999999999" } }))).toBe(false);
  });

  it("user_agent is the header, and its parts are parsed", () => {
    const chrome = makeExchange({
      headers: { "user-agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36" },
    });
    expect(holds("req.user_agent.contains('Chrome')", chrome)).toBe(true);
    expect([
      ...(evaluated("[req.user_agent.name, req.user_agent.version, req.user_agent.os, req.user_agent.os_version]", chrome) as Iterable<unknown>),
    ]).toEqual(["Chrome", "120.0.0.0", "Windows", "10"]);
    expect(holds("req.user_agent.is_desktop && !req.user_agent.is_bot && !req.user_agent.is_mobile", chrome)).toBe(true);
    const bot = makeExchange({ headers: { "user-agent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)" } });
    expect(holds("req.user_agent.is_bot && req.user_agent.name == 'Googlebot' && req.user_agent.url == 'http://www.google.com/bot.html'", bot)).toBe(true);
    expect(holds("req.user_agent == '' && req.user_agent.name == '' && !req.user_agent.is_bot", makeExchange())).toBe(true);
  });
});

describe("req.cookies and rand.double()", () => {
  it("req.cookies maps each name to its cookies, in header order", () => {
    const exchange = makeExchange({ headers: { cookie: 'ab_test=A; theme="dark"; ab_test=B; junk; =x; token=a=b' } });
    expect(holds("'ab_test' in req.cookies && req.cookies['ab_test'][0].value == 'A' && req.cookies['ab_test'][1].value == 'B'", exchange)).toBe(true);
    expect(holds("req.cookies.theme[0].value == 'dark' && req.cookies.token[0].value == 'a=b' && size(req.cookies) == 3", exchange)).toBe(true);
    expect(holds("size(req.cookies) == 0", makeExchange())).toBe(true);
  });

  it(`holds at most ${MAX_COOKIES} cookies of a hostile header`, () => {
    const header = Array.from({ length: 5000 }, (_, i) => `c${i}=${i}`).join("; ");
    expect(evaluated("size(req.cookies)", makeExchange({ headers: { cookie: header } }))).toBe(BigInt(MAX_COOKIES));
  });

  it("rand.double() is in [0, 1)", () => {
    expect(holds("rand.double() >= 0.0 && rand.double() < 1.0")).toBe(true);
  });
});

describe("conn.*: geolocation and TLS from request.cf", () => {
  const facts: ConnectionFacts = {
    country: "DE",
    city: "Berlin",
    continent: "EU",
    region: "Land Berlin",
    postalCode: "10115",
    timezone: "Europe/Berlin",
    latitude: "52.52",
    longitude: "13.40",
    isEUCountry: "1",
    asn: 3320,
    asOrganization: "Deutsche Telekom AG",
    tlsVersion: "TLSv1.3",
    tlsCipher: "AEAD-AES128-GCM-SHA256",
  };
  const withFacts = (cf: ConnectionFacts | undefined) => ({ ...makeExchange(), connection: () => cf });

  it("reads what Cloudflare gives, under ngrok's names", () => {
    const exchange = withFacts(facts);
    expect(holds("conn.geo.country_code == 'DE' && conn.geo.city == 'Berlin' && conn.geo.subdivision == 'Land Berlin'", exchange)).toBe(true);
    expect(holds("double(conn.geo.latitude) >= 45.0", exchange)).toBe(true);
    expect(holds("conn.client_ip.geo.location.is_eu && conn.client_ip.geo.location.timezone == 'Europe/Berlin'", exchange)).toBe(true);
    expect(holds("conn.client_ip.as.number == 3320 && conn.client_ip.as.organization.startsWith('Deutsche')", exchange)).toBe(true);
    expect(holds("conn.tls.version == '1.3' && conn.tls.cipher_suite == 'AEAD-AES128-GCM-SHA256'", exchange)).toBe(true);
  });

  it("absent fields (local development, Node) are empty values, never errors", () => {
    for (const exchange of [makeExchange(), withFacts(undefined), withFacts({})]) {
      expect(holds("conn.geo.country_code == '' && conn.tls.version == '' && !conn.client_ip.geo.location.is_eu", exchange)).toBe(true);
      expect(holds("conn.client_ip.as.number == 0", exchange)).toBe(true);
    }
  });

  it("request.cf is read only by an expression that reads a connection variable", () => {
    let reads = 0;
    const exchange = {
      ...makeExchange(),
      connection: () => {
        reads++;
        return facts;
      },
    };
    const bindings = activation(exchange);
    const plain = compileExpression("conn.client_ip != '' && req.method == 'GET'", "inbound");
    const geo = compileExpression("conn.geo.country_code == 'DE' && conn.geo.city == 'Berlin'", "inbound");
    if (!plain.ok || !geo.ok) throw new Error("does not compile");
    expect(plain.expression.evaluate(exchange, bindings)).toBe(true);
    expect(reads).toBe(0);
    expect(geo.expression.evaluate(exchange, bindings)).toBe(true);
    expect(geo.expression.evaluate(exchange, bindings)).toBe(true);
    expect(reads).toBe(1);
  });
});

describe("endpoint.*, time.now, vars.*", () => {
  afterEach(() => vi.useRealTimers());

  it("endpoint describes the route or tunnel the request arrived at", () => {
    const exchange = makeExchange({ url: "https://api.example.test/x", scope: "route:edge/api" });
    expect(holds("endpoint.id == 'route:edge/api' && endpoint.url == 'https://api.example.test' && endpoint.host == 'api.example.test'", exchange)).toBe(true);
    expect(holds("endpoint.port == 443 && endpoint.protocol == 'https' && endpoint.addr == 'api.example.test:443'", exchange)).toBe(true);
  });

  it("time.now is the current UTC time in RFC 3339", () => {
    vi.useFakeTimers({ now: Date.UTC(2024, 5, 1, 12, 0, 0) });
    expect(evaluated("time.now")).toBe("2024-06-01T12:00:00.000Z");
    expect(holds("timestamp(time.now) > timestamp('2024-01-01T00:00:00Z')")).toBe(true);
  });

  it("vars reads what set-vars wrote; a name never written is an evaluation error", () => {
    const exchange = makeExchange();
    expect(holds("size(vars) == 0", exchange)).toBe(true);
    exchange.policyVars = new Map<string, unknown>([
      ["tier", "gold"],
      ["count", 3n],
    ]);
    expect(holds("vars.tier == 'gold' && vars['count'] > 2", exchange)).toBe(true);
    expect(holds("vars.absent == 'x'", exchange)).toEqual({ error: expect.any(String) });
  });
});
