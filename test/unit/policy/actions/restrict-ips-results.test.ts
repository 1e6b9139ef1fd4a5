/** restrict-ips' result variables as ngrok names them: action, matched_cidr, error; readable as actions.svc.* and actions.ngrok.*. */

import { describe, expect, it } from "vitest";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load } from "../../support/policy-text.ts";

const T0 = 1_700_000_000_000;

/** Runs restrict-ips with `enforce: false`, then answers 299 with the result variables as the body. */
async function results(clientIp: string): Promise<string> {
  const policy = load(
    lines(
      "on_http_request:",
      "  - actions:",
      "      - type: restrict-ips",
      "        config: { enforce: false, allow: [203.0.113.0/24, ' 2001:db8::/32'], deny: [203.0.113.66/32] }",
      "  - expressions:",
      '      - "actions.ngrok.restrict_ips.action == actions.svc.restrict_ips.action"',
      "    actions:",
      "      - type: custom-response",
      "        config: { status_code: 299, body: seen }",
    ),
  );
  const exchange = makeExchange({ clientIp });
  const response = await runPhase(policy.inbound, exchange, { counter: new MemoryCounter(T0) });
  expect(response?.status).toBe(299);
  const { denied, action, matched_cidr, error } = exchange.vars.restrict_ips;
  return JSON.stringify({ denied, action, matched_cidr, code: error.code });
}

describe("restrict-ips result variables", () => {
  it("an allowed address names the allow CIDR it lies in", async () => {
    expect(await results("203.0.113.7")).toBe(JSON.stringify({ denied: false, action: "allow", matched_cidr: "203.0.113.0/24", code: "" }));
    expect(await results("2001:db8::1")).toBe(JSON.stringify({ denied: false, action: "allow", matched_cidr: "2001:db8::/32", code: "" }));
  });

  it("a denied address names the deny CIDR, which wins over the allow CIDR", async () => {
    expect(await results("203.0.113.66")).toBe(JSON.stringify({ denied: true, action: "deny", matched_cidr: "203.0.113.66/32", code: "" }));
  });

  it("an address outside the allow-list is denied with no CIDR matched", async () => {
    expect(await results("192.0.2.1")).toBe(JSON.stringify({ denied: true, action: "deny", matched_cidr: "", code: "" }));
  });

  it("an address that is not one is denied with an error saying so", async () => {
    expect(await results("not-an-address")).toBe(JSON.stringify({ denied: true, action: "deny", matched_cidr: "", code: "ERR_RESTRICT_IPS_NO_ADDRESS" }));
  });
});
