/** `${…}` in add-headers, custom-response and log: values interpolated per request, checked at load, bounded. */

import { describe, expect, it } from "vitest";
import { MAX_CUSTOM_RESPONSE_BODY_CHARS } from "../../../../src/policy/actions/custom-response.ts";
import { MAX_INTERPOLATED_HEADER_CHARS } from "../../../../src/policy/actions/header-text.ts";
import { parse } from "yaml";
import { compilePolicy } from "../../../../src/policy/compile.ts";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import { EvaluationBudget } from "../../../../src/policy/evaluation-budget.ts";
import type { ActionServices } from "../../../../src/policy/exchange.ts";
import { ExpressionErrorLog } from "../../../../src/policy/expression-error-log.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load, POLICY_FILE as FILE, problems } from "../../support/policy-text.ts";

const T0 = 1_700_000_000_000;

/** One action of `type` in `phase`; its config lines start on line 5. */
const action = (type: string, config: string[], phase = "on_http_request") =>
  lines(`${phase}:`, "  - actions:", `      - type: ${type}`, "        config:", ...config.map((line) => `          ${line}`));

/** Services whose interpolation failures are kept as log lines, at a clock that does not move. */
function services(): ActionServices & { lines: string[] } {
  const written: string[] = [];
  return {
    counter: new MemoryCounter(T0),
    lines: written,
    interpolationErrors: new ExpressionErrorLog({ now: () => T0, write: (line) => written.push(line) }),
  };
}

describe("add-headers", () => {
  it("interpolates header values, as ngrok's example x-client-ip: ${conn.client_ip}", async () => {
    const policy = load(
      action("add-headers", ["headers:", "  X-Client-IP: '${conn.client_ip}'", "  X-Request-Path: 'path=${req.url.path}'", "  x-static: plain"]),
    );
    const exchange = makeExchange({ clientIp: "198.51.100.4", url: "https://a.test/v1/orders?x=1" });
    await runPhase(policy.inbound, exchange, services());
    expect(exchange.request.headers.get("x-client-ip")).toBe("198.51.100.4");
    expect(exchange.request.headers.get("x-request-path")).toBe("path=/v1/orders");
    expect(exchange.request.headers.get("x-static")).toBe("plain");
  });

  it("ngrok's example values: a YAML number is its text, and host replaces the value rather than adding one", async () => {
    // A tunnel's policy: a route's may not set host (its upstream gets the host of its URL whatever the header).
    const compiled = compilePolicy(parse(action("add-headers", ["headers: { is-ngrok: 1, x-ratio: 0.5, x-on: true, host: localhost }"])), { origin: "tenant" });
    if (!compiled.ok) throw new Error(compiled.issues.map((issue) => issue.message).join("\n"));
    const policy = compiled.policy;
    const exchange = makeExchange({ headers: { host: "gw.test" } });
    await runPhase(policy.inbound, exchange, services());
    expect([...exchange.request.headers]).toEqual([
      ["host", "localhost"],
      ["is-ngrok", "1"],
      ["x-on", "true"],
      ["x-ratio", "0.5"],
    ]);
  });

  it("outbound, values may read the response", async () => {
    const policy = load(action("add-headers", ["headers: { x-upstream-status: '${res.status_code}' }"], "on_http_response"));
    const exchange = makeExchange({ response: { status: 503 } });
    await runPhase(policy.outbound, exchange, services());
    expect(exchange.response?.headers.get("x-upstream-status")).toBe("503");
  });

  it("a hostile value cannot add a header line: CR, LF, NUL and characters beyond U+00FF are removed", async () => {
    const policy = load(action("add-headers", ["headers: { x-echo: '${req.url.query}|${\"a\\r\\nx-admin: 1\\u0000é\\u20ac\"}' }"]));
    const exchange = makeExchange({ url: "https://a.test/?q=%0D%0Ax-injected:%201" });
    await runPhase(policy.inbound, exchange, services());
    expect(exchange.request.headers.get("x-echo")).toBe("q=%0D%0Ax-injected:%201|ax-admin: 1é");
    expect(exchange.request.headers.get("x-admin")).toBeNull();
  });

  it(`a hostile value is cut at ${MAX_INTERPOLATED_HEADER_CHARS} characters`, async () => {
    const policy = load(action("add-headers", ["headers: { x-echo: '<${req.headers[\"x-big\"][0]}>' }"]));
    const exchange = makeExchange({ headers: { "x-big": "b".repeat(100_000) } });
    await runPhase(policy.inbound, exchange, services());
    const echoed = exchange.request.headers.get("x-echo") ?? "";
    expect(echoed).toHaveLength(MAX_INTERPOLATED_HEADER_CHARS);
    expect(echoed.startsWith("<bbb")).toBe(true);
  });

  it("an expression failing at request time writes empty text and one log line a second, never a crash", async () => {
    const policy = load(action("add-headers", ["headers: { x-token: 'Bearer ${req.headers[\"x-missing\"][0]}' }"]));
    const run = services();
    for (let i = 0; i < 3; i++) {
      const exchange = makeExchange();
      await runPhase(policy.inbound, exchange, run);
      expect(exchange.request.headers.get("x-token")).toBe("Bearer");
    }
    expect(run.lines).toEqual([
      `traffic policy: \${req.headers["x-missing"][0]} in inbound[0].actions[0].config.headers.x-token failed (field not found: x-missing); it is written as empty text`,
    ]);
  });

  it("interpolated characters are charged to the request's budget; past it the value is empty", async () => {
    const policy = load(action("add-headers", ["headers: { x-echo: '${req.headers[\"x-big\"][0]}' }"]));
    // enough to build the variables (the header's 6,000 characters) but not to write it again
    const budget = new EvaluationBudget({ celWork: 10_000, regexWork: 1, logBytes: 1 });
    const exchange = makeExchange({ headers: { "x-big": "b".repeat(6_000) }, budget });
    const run = services();
    await runPhase(policy.inbound, exchange, run);
    expect(exchange.request.headers.get("x-echo")).toBe("");
    expect(run.lines[0]).toContain("units of work per request");
  });

  it("an unknown variable, a phase error and bad syntax are located at the header", () => {
    expect(problems(action("add-headers", ["headers:", "  x-ip: '${conn.clientip}'"]))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.headers.x-ip: \${conn.clientip}: invalid CEL: unknown field 'clientip' of conn`,
    ]);
    expect(problems(action("add-headers", ["headers:", "  x-status: '${res.status_code}'"]))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.headers.x-status: \${res.status_code}: invalid CEL: res is only available in outbound expressions`,
    ]);
    expect(problems(action("add-headers", ["headers:", "  x-ip: 'a ${conn.client_ip'"]))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.headers.x-ip: unterminated \${ at character 3: no closing }`,
    ]);
  });

  it("11 headers are refused, as ngrok refuses them", () => {
    expect(problems(action("add-headers", ["headers:", ...Array.from({ length: 11 }, (_, i) => `  x-h${i}: v`)]))).toEqual([
      `${FILE}:5: on_http_request[0].actions[0].config.headers: exceeds the limit of 10 headers`,
    ]);
    expect(problems(action("remove-headers", [`headers: [${Array.from({ length: 11 }, (_, i) => `x-h${i}`).join(", ")}]`]))).toEqual([
      `${FILE}:5: on_http_request[0].actions[0].config.headers: exceeds the limit of 10 headers`,
    ]);
  });
});

describe("custom-response", () => {
  it("interpolates the body and header values, as ngrok's JSON example", async () => {
    const policy = load(
      action("custom-response", [
        "status_code: 418",
        `body: '{"client":"\${conn.client_ip}","path":"\${req.url.path}","n":\${size(req.url.path)}}'`,
        "headers: { content-type: application/json, x-method: '${req.method}' }",
      ]),
    );
    const response = await runPhase(policy.inbound, makeExchange({ clientIp: "192.0.2.9", url: "https://a.test/api/example" }), services());
    expect(response?.status).toBe(418);
    expect(response?.headers.get("content-type")).toBe("application/json");
    expect(response?.headers.get("x-method")).toBe("GET");
    expect(await response?.json()).toEqual({ client: "192.0.2.9", path: "/api/example", n: 12 });
  });

  it("a body that interpolates nothing is sent as written", async () => {
    const policy = load(action("custom-response", ["body: 'costs $5 {each}'"]));
    const response = await runPhase(policy.inbound, makeExchange(), services());
    expect(await response?.text()).toBe("costs $5 {each}");
  });

  it(`a hostile interpolated body is cut at ${MAX_CUSTOM_RESPONSE_BODY_CHARS} characters`, async () => {
    const filler = "f".repeat(MAX_CUSTOM_RESPONSE_BODY_CHARS - 100);
    const policy = load(action("custom-response", [`body: '${filler}\${req.headers["x-big"][0]}tail'`]));
    const response = await runPhase(policy.inbound, makeExchange({ headers: { "x-big": "b".repeat(200_000) } }), services());
    const text = (await response?.text()) ?? "";
    expect(text).toHaveLength(MAX_CUSTOM_RESPONSE_BODY_CHARS);
    expect(text.endsWith("b".repeat(100))).toBe(true);
  });

  it("a hostile header value cannot split the response's header lines", async () => {
    const policy = load(action("custom-response", ["headers: { location: '/next?${req.url.query}${\"\\r\\nset-cookie: a=b\"}' }", "status_code: 302"]));
    const response = await runPhase(policy.inbound, makeExchange({ url: "https://a.test/?u=1" }), services());
    expect(response?.headers.get("location")).toBe("/next?u=1set-cookie: a=b");
    expect(response?.headers.get("set-cookie")).toBeNull();
  });

  it("a type error in the body is located at the body", () => {
    expect(problems(action("custom-response", ["body: 'x ${req.nope}'"]))).toEqual([
      `${FILE}:5: on_http_request[0].actions[0].config.body: \${req.nope}: invalid CEL: unknown field 'nope' of req`,
    ]);
  });
});

describe("log", () => {
  it("a value that is one ${…} alone keeps its type when a bool or number; lists are written as JSON", async () => {
    const records: Array<Readonly<Record<string, unknown>>> = [];
    const policy = load(
      action("log", [
        "metadata:",
        "  n: '${size(req.url.path)}'",
        "  post: '${req.method == \"POST\"}'",
        "  half: '${1.0 / 2.0}'",
        "  hosts: '${req.headers[\"host\"]}'",
        "  text: 'is ${req.method}'",
      ]),
    );
    const run = { ...services(), decisions: { rateLimit: () => undefined, log: (record: Readonly<Record<string, unknown>>) => void records.push(record) } };
    await runPhase(policy.inbound, makeExchange({ url: "https://a.test/abc", headers: { host: "a.test" } }), run);
    expect(records[0].metadata).toEqual({ n: 4, post: false, half: 0.5, hosts: '["a.test"]', text: "is GET" });
  });
});

describe("the policy's bound on expression characters", () => {
  it("counts ${…} interpolations with the entries' expressions: a hostile policy of many interpolations is refused before any is parsed", () => {
    const expression = "req.url.path + req.method + conn.client_ip";
    const headers = Array.from({ length: 10 }, (_, i) => `  x-h${i}: '\${${expression}}'`);
    const entries = Array.from({ length: 10 }, () => [
      "  - actions:",
      "      - type: add-headers",
      "        config:",
      "          headers:",
      ...headers.map((h) => `          ${h}`),
    ]).flat();
    expect(problems(lines("on_http_request:", ...entries))).toEqual([
      `${FILE}:1: expressions together exceed the limit of 4096 characters per policy (have ${10 * 10 * expression.length})`,
    ]);
  });
});
