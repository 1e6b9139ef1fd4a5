/**
 * `forward-internal`: the URLs it accepts (one message per way to be wrong), the hop chain that stops loops,
 * and the action's halt / continue behaviour against a forwarder it is handed.
 */

import { describe, expect, it } from "vitest";
import { EvaluationBudget } from "../../../../src/policy/evaluation-budget.ts";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import type { ActionServices, Exchange } from "../../../../src/policy/exchange.ts";
import { ForwardChain, MAX_FORWARD_HOPS } from "../../../../src/policy/forward-chain.ts";
import { internalLabelOf, isInternalHost, MAX_INTERNAL_URL_CHARS, parseInternalUrl } from "../../../../src/policy/internal-url.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load, POLICY_FILE as FILE, problems } from "../../support/policy-text.ts";

const services: ActionServices = { counter: new MemoryCounter(0) };

/** A policy of one forward-internal action; its config lines start on line 5. */
const forwarding = (...config: string[]) =>
  lines("on_http_request:", "  - actions:", "      - type: forward-internal", "        config:", ...config.map((line) => `          ${line}`));

describe("internal URLs", () => {
  it("accepts http(s) URLs of .internal hosts, a default port and a trailing dot", () => {
    for (const text of ["https://api.internal", "http://polytrader.internal:80", "https://api.internal:443/", "https://a.b.internal", "https://API.Internal"]) {
      expect(parseInternalUrl(text), text).toMatchObject({ ok: true });
    }
    expect(isInternalHost("api.internal.")).toBe(true);
    expect(isInternalHost("internal")).toBe(false);
    expect(isInternalHost("api.internal.example.com")).toBe(false);
  });

  it.each([
    ["https://api.example.com", "must name an internal endpoint: a host name ending in .internal, such as https://api.internal (got 'api.example.com')"],
    ["https://internal", "must name an internal endpoint: a host name ending in .internal, such as https://api.internal (got 'internal')"],
    ["tcp://ssh.internal:22", "tcp:// endpoints cannot be served: Cloudflare Workers ingress accepts only HTTP(S); use http:// or https://"],
    ["ftp://api.internal", "must be an http:// or https:// URL (got ftp://)"],
    ["https://user:secret@api.internal", "must not carry a user name or password"],
    ["https://api.internal:8080", "port 8080 names no other endpoint: Tollgate tells internal endpoints apart by host name only; leave the port out"],
    ["https://api.internal/v1", "must not have a path, query or fragment: the request keeps its own"],
    ["https://api.internal?x=1", "must not have a path, query or fragment: the request keeps its own"],
    ["api.internal", 'must be a URL such as https://api.internal (got "api.internal")'],
    [
      "https://${req.headers['x-to'][0]}.internal",
      "must name one internal endpoint: ${…} interpolation in url is not supported (write one forward-internal entry per target, gated by expressions)",
    ],
  ])("refuses %s", (text, message) => {
    expect(parseInternalUrl(text)).toEqual({ ok: false, message });
  });

  it(`refuses a url over ${MAX_INTERNAL_URL_CHARS} characters, as a located load error`, () => {
    const long = `https://${"a".repeat(MAX_INTERNAL_URL_CHARS)}.internal`;
    expect(parseInternalUrl(long)).toEqual({ ok: false, message: `must be at most ${MAX_INTERNAL_URL_CHARS} characters (has ${long.length})` });
    expect(problems(forwarding(`url: https://${"a".repeat(100_000)}.internal`))).toEqual([
      `${FILE}:5: on_http_request[0].actions[0].config.url: must be at most ${MAX_INTERNAL_URL_CHARS} characters (has 100017)`,
    ]);
  });

  it("names a tunnel by a single DNS label under .internal", () => {
    expect(internalLabelOf("api.internal")).toBe("api");
    expect(internalLabelOf("API.internal.")).toBe("api");
    expect(internalLabelOf("a.b.internal")).toBeUndefined();
    expect(internalLabelOf("-x.internal")).toBeUndefined();
  });
});

describe("the action's config", () => {
  it("loads ngrok's examples: url, binding: internal, on_error", () => {
    // ngrok-docs traffic-policy/actions/forward-internal.mdx (basic example) and the custom-error-page pattern.
    expect(problems(forwarding("url: https://example.internal"))).toEqual([]);
    expect(problems(forwarding("url: https://tyo-devspace.internal", "binding: internal"))).toEqual([]);
    expect(problems(forwarding("url: https://service.internal", "on_error: continue"))).toEqual([]);
  });

  it("says what is wrong with each field, where", () => {
    expect(problems(forwarding("url: https://api.example.com"))).toEqual([
      `${FILE}:5: on_http_request[0].actions[0].config.url: must name an internal endpoint: a host name ending in .internal, such as https://api.internal (got 'api.example.com')`,
    ]);
    expect(problems(forwarding("url: https://api.internal", "binding: public"))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.binding: must be 'internal': only internal endpoints can be forwarded to, got string "public"`,
    ]);
    expect(problems(forwarding("url: https://api.internal", "on_error: retry"))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.on_error: must be 'halt' or 'continue', got string "retry"`,
    ]);
    expect(problems(forwarding("on_error: halt"))).toEqual([`${FILE}:4: on_http_request[0].actions[0].config.url: is required`]);
  });

  it("runs on requests only", () => {
    const text = lines("on_http_response:", "  - actions:", "      - type: forward-internal", "        config:", "          url: https://api.internal");
    expect(problems(text)).toEqual([`${FILE}:4: on_http_response[0].actions[0].config: forward-internal runs on requests only (inbound / on_http_request)`]);
  });
});

describe("the hop chain", () => {
  const url = new URL("https://api.internal");
  const start = () => ForwardChain.startingAt("route:e/a", "203.0.113.7", new EvaluationBudget());

  it("refuses a target the request already ran through: 508 ERR_SVC_3603", () => {
    const chain = start().to("route:e/b", url) as ForwardChain;
    const loop = chain.to("route:e/a", url);
    expect(loop).toBeInstanceOf(Error);
    expect(loop).toMatchObject({
      status: 508,
      errorCode: "ERR_SVC_3603",
      message: "forward-internal to https://api.internal refused: a loop was detected, this request already ran through that target.",
    });
  });

  it(`allows ${MAX_FORWARD_HOPS} forwards in a row, then answers 508 ERR_SVC_3501`, () => {
    let chain = start();
    for (let hop = 1; hop <= MAX_FORWARD_HOPS; hop++) {
      expect(chain.full(url)).toBeUndefined();
      chain = chain.to(`route:e/${hop}`, url) as ForwardChain;
    }
    expect(chain.hops).toBe(MAX_FORWARD_HOPS);
    expect(chain.full(url)).toMatchObject({
      status: 508,
      errorCode: "ERR_SVC_3501",
      message: `forward-internal to https://api.internal refused: this request was already forwarded ${MAX_FORWARD_HOPS} times, the most a request may be (${MAX_FORWARD_HOPS}).`,
    });
  });

  it("carries the first client address and budget to every target", () => {
    const budget = new EvaluationBudget();
    const chain = ForwardChain.startingAt("tunnel:a", "198.51.100.1", budget).to("tunnel:b", url) as ForwardChain;
    expect(chain.clientIp).toBe("198.51.100.1");
    expect(chain.budget).toBe(budget);
    expect(chain.scopes).toEqual(["tunnel:a", "tunnel:b"]);
  });
});

describe("halt and continue", () => {
  /** An exchange whose forwarder answers `result` and records the URLs it was asked for. */
  function forwardingExchange(ok: boolean): { exchange: Exchange; asked: string[] } {
    const asked: string[] = [];
    const exchange: Exchange = {
      ...makeExchange(),
      forwardInternal: async (url) => {
        asked.push(url.href);
        return { ok, response: new Response(ok ? "from the target" : "target missing", { status: ok ? 200 : 404 }) };
      },
    };
    return { exchange, asked };
  }
  const fallback = (onError: string) =>
    load(
      lines(
        "on_http_request:",
        "  - actions:",
        "      - type: forward-internal",
        `        config: { url: "https://service.internal", on_error: ${onError} }`,
        "      - type: custom-response",
        "        config: { status_code: 503, body: fallback }",
      ),
    );

  it("a forward that succeeds ends the phase with the target's answer", async () => {
    const { exchange, asked } = forwardingExchange(true);
    const response = await runPhase(fallback("continue").inbound, exchange, services);
    expect(asked).toEqual(["https://service.internal/"]);
    expect(await response?.text()).toBe("from the target");
  });

  it("halt: a failed forward answers with its error; the next actions do not run", async () => {
    const { exchange } = forwardingExchange(false);
    const response = await runPhase(fallback("halt").inbound, exchange, services);
    expect(response?.status).toBe(404);
    expect(await response?.text()).toBe("target missing");
  });

  it("continue: after a failed forward the next actions run (ngrok's custom error page)", async () => {
    const { exchange } = forwardingExchange(false);
    const response = await runPhase(fallback("continue").inbound, exchange, services);
    expect(response?.status).toBe(503);
    expect(await response?.text()).toBe("fallback");
  });

  it("where nothing may be forwarded to, every target is missing: 404 ERR_SVC_3200", async () => {
    const response = await runPhase(fallback("halt").inbound, makeExchange(), services);
    expect(response?.status).toBe(404);
    expect(await response?.json()).toMatchObject({ error_code: "ERR_SVC_3200" });
  });
});
