/**
 * ngrok's documented examples (test/fixtures/ngrok-examples/) doing in the Worker what ngrok's docs say they do:
 * answers, headers, variables, logs and IP restrictions. Limits and forwarding: ngrok-examples-routing.test.ts;
 * webhooks: ngrok-examples-webhooks.test.ts.
 */

import { afterEach, describe, expect, it, vi } from "vitest";
import { ask, examplesGateway, exampleRequest as to, seenUpstream } from "./ngrok-examples-gateway.ts";

const routes = examplesGateway();
const EDGE_UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91";
const FIREFOX_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const GPTBOT_UA = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.1; +https://openai.com/gptbot)";
const GOOGLEBOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

describe("custom-response and deny examples", () => {
  it("hello: every request is answered 200 Hello, World!", async () => {
    expect(await ask(routes, to("responses-hello"))).toMatchObject({ status: 200, text: "Hello, World!" });
  });

  it("maintenance page: 503 with the HTML page as text/html", async () => {
    const answer = await ask(routes, to("responses-maintenance-page", "/anything"));
    expect(answer).toMatchObject({ status: 503, text: expect.stringContaining("<h1>Service Unavailable</h1>") });
    expect(answer.headers.get("content-type")).toBe("text/html");
  });

  it("deny: every request is answered 404", async () => {
    expect((await ask(routes, to("responses-deny-all"))).status).toBe(404);
  });

  it("deny other methods than GET: POST gets 403, GET reaches the upstream", async () => {
    expect((await ask(routes, to("responses-deny-non-get", "/", { method: "POST", body: "x" }))).status).toBe(403);
    expect((await seenUpstream(routes, to("responses-deny-non-get"))).method).toBe("GET");
  });

  it("require Api-Key: 404 without it, the HTML page with it", async () => {
    expect((await ask(routes, to("responses-require-api-key"))).status).toBe(404);
    const answer = await ask(routes, to("responses-require-api-key", "/", { headers: { "api-key": "k" } }));
    expect(answer).toMatchObject({ status: 200, text: expect.stringContaining("<h1>Hello world</h1>") });
  });

  it("require Authorization: 401 JSON without it, the upstream with it", async () => {
    const answer = await ask(routes, to("responses-require-authorization"));
    expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({ status: 401, body: { error: "Authorization header required" } });
    expect((await seenUpstream(routes, to("responses-require-authorization", "/", { headers: { authorization: "Bearer t" } }))).url).toBe("/");
  });

  it("deprecate API v2: X-Api-Version 2 gets 400, version 3 reaches the upstream", async () => {
    const answer = await ask(routes, to("responses-deprecate-version", "/", { headers: { "X-Api-Version": "2" } }));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toEqual({ error: { message: "Version 2 of the API is no longer supported. Use Version 3 instead." } });
    expect((await seenUpstream(routes, to("responses-deprecate-version", "/", { headers: { "X-Api-Version": "3" } }))).headers["x-api-version"]).toBe("3");
  });

  it("robots.txt: req.url.contains('/robots.txt') answers two lines; other URLs reach the upstream", async () => {
    const answer = await ask(routes, to("responses-robots-txt", "/robots.txt"));
    expect(answer).toMatchObject({ status: 200, text: "User-agent: ChatGPT-User\r\nDisallow: /" });
    expect((await seenUpstream(routes, to("responses-robots-txt", "/index.html"))).url).toBe("/index.html");
  });

  it("?debug=true answers the custom response; ?debug=false reaches the upstream", async () => {
    expect(await ask(routes, to("responses-debug-query-param", "/x?debug=true"))).toMatchObject({ status: 200, text: "Custom response from Traffic Policy" });
    expect((await seenUpstream(routes, to("responses-debug-query-param", "/x?debug=false"))).url).toBe("/x?debug=false");
  });

  it.each([
    ["responses-edge-user-agent-header", EDGE_UA, 200],
    ["responses-edge-user-agent-name", EDGE_UA, 200],
    ["responses-deny-bots", GOOGLEBOT_UA, 403],
    ["responses-deny-named-bots", GPTBOT_UA, 404],
    ["responses-deny-bots-regex", "ChatGPT-User/1.0", 404],
  ])("%s: its user agent (%s) gets %i, Firefox reaches the upstream", async (name, userAgent, status) => {
    expect((await ask(routes, to(name, "/", { headers: { "user-agent": userAgent } }))).status).toBe(status);
    expect((await seenUpstream(routes, to(name, "/", { headers: { "user-agent": FIREFOX_UA } }))).headers["user-agent"]).toBe(FIREFOX_UA);
  });

  it("limit size: a POST of 1000 bytes gets 400, one of 999 reaches the upstream", async () => {
    expect((await ask(routes, to("responses-limit-size", "/", { method: "POST", body: "a".repeat(1000), headers: { "content-length": "1000" } }))).status).toBe(
      400,
    );
    expect(
      (await seenUpstream(routes, to("responses-limit-size", "/", { method: "POST", body: "a".repeat(999), headers: { "content-length": "999" } }))).body,
    ).toHaveLength(999);
  });

  it("enforce TLS 1.3: a TLS 1.2 connection gets 401, TLS 1.3 reaches the upstream", async () => {
    expect(await ask(routes, to("responses-enforce-tls", "/", { cf: { tlsVersion: "TLSv1.2" } }))).toMatchObject({
      status: 401,
      text: "Unauthorized: TLS version too old",
    });
    expect((await seenUpstream(routes, to("responses-enforce-tls", "/", { cf: { tlsVersion: "TLSv1.3" } }))).url).toBe("/");
  });

  it("block countries: a client in the US gets 401, one in France reaches the upstream", async () => {
    expect((await ask(routes, to("responses-block-countries", "/", { cf: { country: "US" } }))).status).toBe(401);
    expect((await seenUpstream(routes, to("responses-block-countries", "/", { cf: { country: "FR" } }))).url).toBe("/");
  });

  it("deny outside the EU: a client in the US gets 403, one in Germany reaches the upstream", async () => {
    expect((await ask(routes, to("responses-deny-outside-eu", "/", { cf: { country: "US" } }))).status).toBe(403);
    expect((await seenUpstream(routes, to("responses-deny-outside-eu", "/", { cf: { country: "DE", isEUCountry: "1" } }))).url).toBe("/");
  });
});

describe("add-headers and remove-headers examples", () => {
  it("x-client-ip arrives upstream with the client's address", async () => {
    expect((await seenUpstream(routes, to("headers-client-ip", "/", { clientIp: "198.51.100.23" }))).headers["x-client-ip"]).toBe("198.51.100.23");
  });

  it("X-Test added and X-Remove-Me removed on the way upstream", async () => {
    const seen = await seenUpstream(routes, to("headers-add-and-remove-request", "/", { headers: { "x-remove-me": "secret" } }));
    expect([seen.headers["x-test"], seen.headers["x-remove-me"]]).toEqual(["123", undefined]);
  });

  it("X-Test added to the response", async () => {
    expect((await ask(routes, to("headers-add-and-remove-response"))).headers.get("x-test")).toBe("123");
  });

  it("x-client-version and x-trace-id removed on the way upstream, other headers kept", async () => {
    const headers = { "x-client-version": "1", "x-trace-id": "t", "x-kept": "k" };
    const seen = await seenUpstream(routes, to("headers-remove-request", "/", { headers }));
    expect([seen.headers["x-client-version"], seen.headers["x-trace-id"], seen.headers["x-kept"]]).toEqual([undefined, undefined, "k"]);
  });

  it("a YAML number as a header value, the country code, and referrer removed", async () => {
    const seen = await seenUpstream(routes, to("headers-country-number-value", "/", { cf: { country: "PT" }, headers: { referrer: "r" } }));
    expect([seen.headers["is-ngrok"], seen.headers.country, seen.headers.referrer]).toEqual(["1", "PT", undefined]);
  });

  it("client address, path, country code and user agent interpolated", async () => {
    const request = to("headers-path-and-user-agent", "/p", { clientIp: "192.0.2.5", cf: { country: "JP" }, headers: { "user-agent": FIREFOX_UA } });
    const { headers } = await seenUpstream(routes, request);
    expect(headers).toMatchObject({ "x-client-ip": "192.0.2.5", "x-request-path": "/p", "x-country-code": "JP", "x-user-agent": FIREFOX_UA });
  });
});

describe("set-vars examples", () => {
  it.each([
    ["vars-hello-world", "Hello, World!", {}],
    ["vars-every-type", "bar 1.5 1 value value2", {}],
    ["vars-interpolated", "Your IP is 198.51.100.8!", { clientIp: "198.51.100.8" }],
  ])("%s answers %j", async (name, text, init) => {
    expect(await ask(routes, to(name, "/", init))).toMatchObject({ status: 200, text });
  });
});

describe("restrict-ips and log examples", () => {
  afterEach(() => vi.restoreAllMocks());

  it.each([
    ["ips-allow-and-deny", "1.1.1.1", true],
    ["ips-allow-and-deny", "203.0.113.7", false],
    ["ips-allow-and-deny", "e680:5791:be4c:5739:d959:7b94:6d54:d4b4", false],
    ["ips-allow-bare-address", "198.51.100.42", true],
    ["ips-allow-bare-address", "198.51.100.43", false],
    ["ips-allow-bare-address", "203.0.113.200", true],
    ["ips-allow-default-enforce", "198.51.100.42", true],
    ["ips-allow-default-enforce", "192.0.2.1", false],
  ])("%s: %s is allowed: %s", async (name, clientIp, allowed) => {
    const answer = await ask(routes, to(name, "/", { clientIp }));
    expect(answer.status).toBe(allowed ? 200 : 403);
  });

  /** The metadata of the log records the gateway writes while `run` runs. */
  async function logged(run: () => Promise<unknown>): Promise<Array<Record<string, unknown>>> {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    await run();
    return lines.flatMap((line) => {
      const record = JSON.parse(line) as { event?: string; metadata?: Record<string, unknown> };
      return record.event === "traffic_policy.log" && record.metadata ? [record.metadata] : [];
    });
  }

  it("restrict-ips dry run: a client outside the list reaches the upstream and the log says what would happen", async () => {
    const records = await logged(() => seenUpstream(routes, to("ips-dry-run-log", "/", { clientIp: "192.0.2.1" })));
    expect(records).toHaveLength(1);
    expect(records[0].message).toMatch(/^Restrict IPs action would be \w+ for 192\.0\.2\.1\.$/);
    const allowed = await logged(() => seenUpstream(routes, to("ips-dry-run-log", "/", { clientIp: "203.0.113.9" })));
    expect(allowed[0].matched_cidr).toBe("203.0.113.0/24");
  });

  it("log: one record per request with the message and the endpoint's id", async () => {
    const records = await logged(() => seenUpstream(routes, to("log-endpoint-id")));
    expect(records).toEqual([{ message: "Log action executed.", endpoint_id: expect.stringMatching(/\S/) }]);
  });
});
