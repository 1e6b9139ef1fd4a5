/**
 * settle_cost through the policy engine and the response hook, on the real bucket rows: one settle per admitted
 * request, the estimate kept whenever the response cannot settle it, hostile responses (10 MB header or body,
 * 2^53, a string), and the load errors a document gets.
 */

import { describe, expect, it } from "vitest";
import { settleOnResponse } from "../../../../src/gateway/response-settle.ts";
import { type BucketRow, decideRow, emptyRow, settleRow } from "../../../../src/limiter/bucket-row.ts";
import type { WindowSpec } from "../../../../src/limiter/sliding-window.ts";
import { type LimitSpec, limitOf } from "../../../../src/limiter/window-rules.ts";
import { loadPolicy } from "../../../../src/policy/compile.ts";
import { type EvaluationLog, runPhase } from "../../../../src/policy/evaluate.ts";
import type { BucketRef, CountResult, RateLimitCounter } from "../../../../src/policy/exchange.ts";
import { formatIssue } from "../../../../src/policy/issues.ts";
import { makeExchange } from "../../support/exchange.ts";

/** Buckets as the object keeps them, reservations and settles included; every settle sent is recorded. */
class SettlingCounter implements RateLimitCounter {
  row: BucketRow = emptyRow;
  readonly sent: number[] = [];
  readonly now = 1_700_000_000_000;
  async count(_bucket: BucketRef, spec: WindowSpec | LimitSpec): Promise<CountResult> {
    const { windows, cost, reserve } = limitOf(spec);
    const { decision, row } = decideRow(this.row, { id: "b", windows, cost, want: 1, leaseMs: 0, forRequest: true, reserve }, this.now);
    this.row = row;
    if (!reserve || !decision.allowed) return { ok: true, decision };
    return {
      ok: true,
      decision,
      settle: async (settled) => {
        this.sent.push(settled);
        this.row = settleRow(this.row, { id: "b", reservation: reserve, cost: settled }, this.now).row;
      },
    };
  }
}

const quietLog: EvaluationLog = { expressionError: () => {} };

/** Why settles failed, as the isolate's log would get them. */
const failures: string[] = [];
const settleLog = { settleError: (_owner: object, _source: string, message: string) => void failures.push(message) };

function policyWith(settle: string, phase = "inbound") {
  return `${phase}:
  - actions:
      - type: rate-limit
        config:
          cost: "int(getReqHeader('x-max-tokens')[0])"
          settle_cost: ${JSON.stringify(settle)}
          windows: [{ capacity: 1000, rate: 60s }]
`;
}

function compiled(text: string) {
  const result = loadPolicy(text, "policies/llm.yaml");
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join("\n"));
  return result.policy;
}

/** One request reserving `maxTokens`, answered with `response`; returns its status, what the client got, and the work left after it. */
async function exchangeOnce(counter: SettlingCounter, settle: string, maxTokens: number, response: () => Response) {
  const exchange = makeExchange({ headers: { "x-max-tokens": String(maxTokens) } });
  const refused = await runPhase(compiled(policyWith(settle)).inbound, exchange, { counter }, quietLog);
  if (refused) return { status: refused.status, text: "" };
  const after: Promise<unknown>[] = [];
  const sent = settleOnResponse(response(), exchange, { waitUntil: (task) => void after.push(task) }, settleLog);
  // A second call finds the settles taken: one settle per request, whatever calls the hook.
  settleOnResponse(sent, exchange, { waitUntil: (task) => void after.push(task) }, settleLog);
  const text = await sent.text();
  await Promise.all(after);
  return { status: sent.status, text };
}

const json =
  (body: unknown, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), { headers: { "content-type": "application/json", ...headers } });

describe("rate-limit settle_cost", () => {
  it("replaces the reservation once with the usage the body reports", async () => {
    const counter = new SettlingCounter();
    const first = await exchangeOnce(counter, "res.body.usage.total_tokens", 600, json({ usage: { total_tokens: 1_100 } }));
    expect(first).toEqual({ status: 200, text: '{"usage":{"total_tokens":1100}}' });
    expect(counter.sent).toEqual([1_100]);
    expect((await exchangeOnce(counter, "res.body.usage.total_tokens", 1, json({}))).status).toBe(429);
  });

  it("keeps the estimate for a 10 MB body, which the client still gets whole", async () => {
    const counter = new SettlingCounter();
    const big = "x".repeat(10 * 1024 * 1024);
    const first = await exchangeOnce(counter, "res.body.usage.total_tokens", 900, json({ pad: big, usage: { total_tokens: 1 } }));
    expect(first.text).toHaveLength(big.length + '{"pad":"","usage":{"total_tokens":1}}'.length);
    expect(counter.sent).toEqual([]);
    expect((await exchangeOnce(counter, "res.body.usage.total_tokens", 101, json({}))).status).toBe(429);
  });

  it("keeps the estimate for a 10 MB settle header, 2^53, a string, an error, and a body that is not JSON", async () => {
    const counter = new SettlingCounter();
    failures.length = 0;
    const header = "int(res.headers['x-usage'][0])";
    await exchangeOnce(counter, header, 100, () => new Response("ok", { headers: { "x-usage": "9".repeat(10 * 1024 * 1024) } }));
    await exchangeOnce(counter, header, 100, () => new Response("ok", { headers: { "x-usage": String(2 ** 53) } }));
    await exchangeOnce(counter, "res.headers['x-usage'][0]", 100, () => new Response("ok", { headers: { "x-usage": "12" } }));
    await exchangeOnce(counter, header, 100, () => new Response("ok"));
    await exchangeOnce(
      counter,
      "res.body.usage.total_tokens",
      100,
      () => new Response('{"usage":{"total_tokens":1}}', { headers: { "content-type": "text/plain" } }),
    );
    await exchangeOnce(counter, "res.body.usage.total_tokens", 100, json({ usage: { total_tokens: 2 ** 53 } }));
    expect(counter.sent).toEqual([]);
    expect(failures).toEqual([
      expect.stringMatching(/^settle_cost: expression exceeds the limit of \d+ units of work per request/),
      "settle_cost 9007199254740992 is outside 0 to 1000000",
      "settle_cost must be an int, got a string",
      "settle_cost: field not found: x-usage",
      "settle_cost: field not found: body; res.body is absent: the content type is neither JSON nor text/event-stream",
      // Past 2^53 - 1 a JSON number stays a double.
      "settle_cost 9007199254740992 is not an integer from 0 to 1000000",
    ]);
    // Six estimates of 100 stay: 400 more fit, 401 would not.
    expect((await exchangeOnce(counter, header, 401, () => new Response("ok"))).status).toBe(429);
    expect((await exchangeOnce(counter, header, 400, () => new Response("ok"))).status).toBe(200);
  });

  it("settles from the status: a failed upstream call costs nothing", async () => {
    const counter = new SettlingCounter();
    await exchangeOnce(counter, "res.status_code >= 500 ? 0 : 1000", 1000, () => new Response("down", { status: 503 }));
    expect(counter.sent).toEqual([0]);
    expect((await exchangeOnce(counter, "1000", 1000, () => new Response("ok"))).status).toBe(200);
  });

  it("is refused at load where it cannot work, with the place it is at", () => {
    const problems = (text: string) => {
      const result = loadPolicy(text, "policies/llm.yaml");
      return result.ok ? [] : result.issues.map(formatIssue);
    };
    expect(problems(policyWith("res.body.usage.total_tokens +"))[0]).toMatch(
      /^policies\/llm\.yaml:\d+: inbound\[0\]\.actions\[0\]\.config\.settle_cost: invalid CEL/,
    );
    expect(problems(policyWith("res.body.usage.total_tokens", "outbound"))).toEqual([
      expect.stringMatching(/outbound\[0\]\.actions\[0\]\.config\.settle_cost: is for a rate-limit on the request \(inbound\)/),
    ]);
  });
});
