/** The variables expressions read (`req`, `conn`, `actions`, `res`): built once per phase, again after actions ran. */

import { describe, expect, it } from "vitest";
import { runPhase } from "../../../src/policy/evaluate.ts";
import type { Exchange } from "../../../src/policy/exchange.ts";
import { ExpressionErrorLog } from "../../../src/policy/expression-error-log.ts";
import { makeExchange } from "../support/exchange.ts";
import { MemoryCounter } from "../support/memory-counter.ts";
import { lines, load } from "../support/policy-text.ts";

const T0 = 1_700_000_000_000;
const quietLog = () => new ExpressionErrorLog({ now: () => T0, write: () => {} });

/**
 * The exchange, with a count of how often anything read its action variables (a snapshot reads them once,
 * when an expression first reads `actions`).
 */
function countingVarsReads(exchange: Exchange): { exchange: Exchange; reads: () => number } {
  let reads = 0;
  const vars = exchange.vars;
  const counted = Object.defineProperty({ ...exchange }, "vars", {
    get: () => {
      reads++;
      return vars;
    },
  }) as Exchange;
  return { exchange: counted, reads: () => reads };
}

const filler = (count: number) =>
  Array.from({ length: count }, (_, index) => [
    `  - expressions: ["${index % 2 === 0 ? "actions.svc.restrict_ips.denied || req.method == 'DELETE'" : "!actions.svc.rate_limit.limited && req.headers['x-absent'][0] == 'y'"}"]`,
    "    actions: [{ type: deny }]",
  ]).flat();

describe("the variables of a phase", () => {
  it("are built once for 63 entries whose expressions do not match or fail", async () => {
    const policy = load(lines("inbound:", ...filler(63)));
    const { exchange, reads } = countingVarsReads(makeExchange());
    expect(await runPhase(policy.inbound, exchange, { counter: new MemoryCounter(T0) }, quietLog())).toBeUndefined();
    expect(reads()).toBe(1);
  });

  it("are built again after an entry's actions ran, so later expressions see what they changed", async () => {
    const policy = load(
      lines(
        "inbound:",
        ...filler(3),
        "  - actions:",
        "      - type: add-headers",
        "        config: { headers: { x-tier: gold } }",
        "      - type: rate-limit",
        "        config: { name: per-client, capacity: 5, rate: 60s }",
        "  - expressions: [\"req.headers['x-tier'][0] == 'gold'\", \"actions.svc.rate_limit.bucket_key == '203.0.113.7'\"]",
        "    actions:",
        "      - type: custom-response",
        "        config: { status_code: 299, body: seen }",
      ),
    );
    const { exchange, reads } = countingVarsReads(makeExchange({ clientIp: "203.0.113.7" }));
    const response = await runPhase(policy.inbound, exchange, { counter: new MemoryCounter(T0) }, quietLog());
    expect(response?.status).toBe(299);
    expect(await response?.text()).toBe("seen");
    // Once for the three fillers, the rate limit's own read, once for the entry after the actions.
    expect(reads()).toBe(3);
  });

  it("the outbound phase reads the response and the request headers as forwarded", async () => {
    const policy = load(
      lines(
        "outbound:",
        "  - expressions: [\"res.status_code == 201\", \"req.headers['x-forwarded-host'][0] == 'api.example.test'\"]",
        "    actions: [{ type: add-headers, config: { headers: { x-seen: yes } } }]",
        "  - expressions: [\"res.headers['x-seen'][0] == 'yes'\"]",
        "    actions: [{ type: add-headers, config: { headers: { x-seen-again: yes } } }]",
      ),
    );
    const exchange = makeExchange({ response: { status: 201 } });
    // What forwarding the request does between the phases.
    exchange.request.headers.set("x-forwarded-host", "api.example.test");
    await runPhase(policy.outbound, exchange, { counter: new MemoryCounter(T0) }, quietLog());
    expect(exchange.response?.headers.get("x-seen-again")).toBe("yes");
  });
});
