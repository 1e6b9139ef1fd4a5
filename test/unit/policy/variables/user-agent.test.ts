/** The User-Agent parser behind req.user_agent.*: common agents, bounded input, parsed only when read. */

import { describe, expect, it } from "vitest";
import { compileExpression } from "../../../../src/policy/cel.ts";
import { activation } from "../../../../src/policy/cel-activation.ts";
import { MAX_USER_AGENT_CHARS, parseUserAgent } from "../../../../src/policy/variables/user-agent.ts";
import { makeExchange } from "../../support/exchange.ts";

describe("parseUserAgent", () => {
  it.each([
    [
      "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
      { name: "Safari", version: "17.1", os: "iOS", os_version: "17.1", device: "iPhone", is_mobile: true, is_tablet: false, is_desktop: false },
    ],
    [
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
      { name: "Edge", version: "120.0.2210.91", os: "macOS", os_version: "10.15.7", is_desktop: true },
    ],
    [
      "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
      { name: "Firefox", version: "121.0", os: "Linux", is_desktop: true, is_bot: false },
    ],
    [
      "Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
      { name: "Chrome", os: "Android", os_version: "14", is_tablet: true, is_mobile: false, device: "Tablet" },
    ],
    ["curl/8.4.0", { name: "curl", version: "8.4.0", is_bot: true, is_desktop: false }],
    [
      "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
      { name: "bingbot", version: "2.0", is_bot: true, url: "http://www.bing.com/bingbot.htm" },
    ],
    ["", { name: "", version: "", os: "", is_bot: false, is_desktop: false }],
    ["\u0000\u00ff garbage ((((", { name: "", os: "", is_bot: false }],
  ])("%s", (header, expected) => {
    expect(parseUserAgent(header)).toMatchObject(expected);
  });

  it(`reads only the first ${MAX_USER_AGENT_CHARS} characters of a hostile header`, () => {
    const hostile = `${"a".repeat(MAX_USER_AGENT_CHARS)} Googlebot/2.1 ${"bot/".repeat(250_000)}`;
    expect(parseUserAgent(hostile)).toMatchObject({ is_bot: false, name: "" });
    const botty = "xbot".repeat(300_000);
    const parsed = parseUserAgent(botty);
    expect(parsed.is_bot).toBe(true);
    expect(parsed.name.length).toBeLessThanOrEqual(128);
  });
});

describe("req.user_agent.* is parsed only when an expression reads it", () => {
  it("a policy that never reads it never looks at the header", () => {
    let reads = 0;
    class CountingHeaders extends Headers {
      override get(name: string): string | null {
        if (name === "user-agent") reads++;
        return super.get(name);
      }
    }
    const exchange = makeExchange();
    const counted = { ...exchange, request: { ...exchange.request, headers: new CountingHeaders({ "user-agent": "curl/8.4.0" }) } };
    const bindings = activation(counted);
    const plain = compileExpression("req.method == 'GET' && req.user_agent.startsWith('curl')", "inbound");
    const parsed = compileExpression("req.user_agent.is_bot && req.user_agent.name == 'curl'", "inbound");
    if (!plain.ok || !parsed.ok) throw new Error("does not compile");
    expect(plain.expression.evaluate(counted, bindings)).toBe(true);
    expect(reads).toBe(0);
    expect(parsed.expression.evaluate(counted, bindings)).toBe(true);
    expect(parsed.expression.evaluate(counted, bindings)).toBe(true);
    expect(reads).toBe(1);
  });
});
