/**
 * The rate-limit action's new forms through the policy engine, on the real bucket rows: tiers that share one
 * bucket, costs from CEL (and what an invalid one does), several windows in the RateLimit fields, and the
 * bounds a hostile document meets.
 */

import { describe, expect, it } from "vitest";
import { type BucketRow, decideRow, emptyRow } from "../../../src/limiter/bucket-row.ts";
import type { WindowSpec } from "../../../src/limiter/sliding-window.ts";
import { type LimitSpec, limitOf } from "../../../src/limiter/window-rules.ts";
import { loadPolicy } from "../../../src/policy/compile.ts";
import { type EvaluationLog, runPhase } from "../../../src/policy/evaluate.ts";
import type { BucketRef, CountResult, RateLimitCounter } from "../../../src/policy/exchange.ts";
import { formatIssue } from "../../../src/policy/issues.ts";
import { rateLimitField, rateLimitPolicyField } from "../../../src/policy/rate-limit-fields.ts";
import { makeExchange } from "../support/exchange.ts";

/** Buckets as the object keeps them (bucket-row.ts), every request decided there, at a clock the test sets. */
class RowCounter implements RateLimitCounter {
  readonly rows = new Map<string, BucketRow>();
  now = 1_700_000_000_000;
  async count(bucket: BucketRef, spec: WindowSpec | LimitSpec): Promise<CountResult> {
    const id = JSON.stringify(bucket);
    const { windows, cost } = limitOf(spec);
    const { decision, row } = decideRow(this.rows.get(id) ?? emptyRow, { id, windows, cost, want: 1, leaseMs: 0, forRequest: true }, this.now);
    this.rows.set(id, row);
    return { ok: true, decision };
  }
}

/** Expression failures are not what these tests look at. */
const quietLog: EvaluationLog = { expressionError: () => {} };

const lines = (...text: string[]) => `${text.join("\n")}\n`;
function rateLimit(...config: string[]): string {
  return lines("inbound:", "  - actions:", "      - type: rate-limit", "        config:", ...config.map((line) => `          ${line}`));
}

function compiled(text: string) {
  const result = loadPolicy(text, "policies/api.yaml");
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join("\n"));
  return result.policy;
}

function problems(text: string): string[] {
  const result = loadPolicy(text, "policies/api.yaml");
  return result.ok ? [] : result.issues.map(formatIssue);
}

async function statuses(text: string, counter: RateLimitCounter, requests: Record<string, string>[]) {
  const policy = compiled(text);
  const out: number[] = [];
  for (const headers of requests) {
    const exchange = makeExchange({ headers });
    const response = await runPhase(policy.inbound, exchange, { counter }, quietLog);
    out.push(response?.status ?? 200);
  }
  return out;
}

const TIERED = rateLimit(
  "name: plans",
  "bucket_key: [\"req.headers['x-api-key']\"]",
  "tiers:",
  "  - when: \"'pro' in getReqHeader('x-plan')\"",
  "    windows: [{ capacity: 5, rate: 60s }]",
  "  - windows: [{ capacity: 3, rate: 60s }]",
);

describe("rate-limit tiers", () => {
  it("a customer moved from free to pro mid-window keeps the count used, and the new capacity applies at once", async () => {
    const counter = new RowCounter();
    const free = { "x-api-key": "k1" };
    const pro = { "x-api-key": "k1", "x-plan": "pro" };
    expect(await statuses(TIERED, counter, [free, free, free, free])).toEqual([200, 200, 200, 429]);
    expect(await statuses(TIERED, counter, [pro, pro, pro])).toEqual([200, 200, 429]);
    // And back to free: 5 counted against a capacity of 3.
    expect(await statuses(TIERED, counter, [free])).toEqual([429]);
  });

  it("a tier list that does not end unconditionally needs windows for the rest", () => {
    expect(problems(rateLimit("tiers:", "  - when: \"hasReqHeader('x-plan')\"", "    windows: [{ capacity: 5, rate: 60s }]"))).toEqual([
      "policies/api.yaml:5: inbound[0].actions[0].config.tiers: must end with a tier without when, or come with windows for requests no tier matches",
    ]);
  });

  it("a tier list of 10,000 is refused", () => {
    const many = Array.from({ length: 10_000 }, () => "  - { when: 'true', windows: [{ capacity: 1, rate: 1s }] }");
    expect(problems(rateLimit("tiers:", ...many))).toEqual(["policies/api.yaml:5: inbound[0].actions[0].config.tiers: must have at most 16 tiers"]);
  });

  it("a tier condition that is not CEL is refused where it is written", () => {
    expect(
      problems(rateLimit("tiers:", "  - when: 'req.nope =='", "    windows: [{ capacity: 5, rate: 60s }]", "  - windows: [{ capacity: 1, rate: 60s }]")),
    ).toEqual([expect.stringMatching(/^policies\/api\.yaml:6: inbound\[0\]\.actions\[0\]\.config\.tiers\[0\]\.when: invalid CEL/)]);
  });
});

const COSTED = rateLimit("name: tokens", "cost: \"int(getReqHeader('x-cost')[0])\"", "windows: [{ capacity: 10, rate: 60s }]");

describe("rate-limit cost", () => {
  it("admits a request only if its whole cost fits, and a cost of 0 only checks", async () => {
    const counter = new RowCounter();
    const cost = (n: string) => ({ "x-cost": n });
    expect(await statuses(COSTED, counter, [cost("4"), cost("4"), cost("4"), cost("0"), cost("2"), cost("0")])).toEqual([200, 200, 429, 200, 200, 429]);
  });

  it("a cost that is not an int from 0 to 1,000,000 is refused uncounted and says why in the error variables", async () => {
    const counter = new RowCounter();
    const policy = compiled(COSTED);
    for (const [value, message] of [
      ["abc", /cost: .*/],
      [String(2 ** 53), /cost 9007199254740992 is outside 0 to 1000000/],
      ["-1", /cost -1 is outside 0 to 1000000/],
    ] as const) {
      const exchange = makeExchange({ headers: { "x-cost": value } });
      const response = await runPhase(policy.inbound, exchange, { counter }, quietLog);
      expect(response?.status).toBe(429);
      expect(exchange.vars.rate_limit).toMatchObject({ limited: true, error: { code: "ERR_RATE_LIMIT_COST", message: expect.stringMatching(message) } });
    }
    // Counted nowhere: the whole capacity of 10 is still there.
    expect(await statuses(COSTED, counter, [{ "x-cost": "10" }, { "x-cost": "1" }])).toEqual([200, 429]);
  });

  it("a literal cost of 2^53 is refused at load", () => {
    expect(problems(rateLimit(`cost: ${2 ** 53}`, "capacity: 10", "rate: 60s"))).toEqual([
      "policies/api.yaml:5: inbound[0].actions[0].config.cost: must be an integer",
      "policies/api.yaml:5: inbound[0].actions[0].config.cost: must be at most 1000000",
    ]);
  });
});

describe("several windows", () => {
  it("refuse all or nothing, and list every window in RateLimit-Policy and the closest in RateLimit", async () => {
    const counter = new RowCounter();
    const text = rateLimit(
      "name: api",
      "ratelimit_headers: true",
      "windows:",
      "  - { capacity: 3, rate: 1s }",
      "  - { capacity: 4, rate: 1h }",
      "  - { capacity: 100, period: month, offset: '+02:00' }",
    );
    const policy = compiled(text);
    const exchanges = [];
    for (let i = 0; i < 4; i++) {
      const exchange = makeExchange();
      await runPhase(policy.inbound, exchange, { counter }, quietLog);
      exchanges.push(exchange);
    }
    expect(exchanges.map((e) => e.vars.rate_limit.limited)).toEqual([false, false, false, true]);
    counter.now += 1_000;
    const fourth = makeExchange();
    await runPhase(policy.inbound, fourth, { counter }, quietLog);
    expect(fourth.vars.rate_limit.limited).toBe(false);
    expect(rateLimitPolicyField(fourth.rateLimitFields!)).toMatch(/^"api\/1s";q=3;w=1, "api\/1h";q=4;w=3600, "api\/month\+02:00";q=100;w=\d+$/);
    expect(rateLimitField(fourth.rateLimitFields!)).toBe('"api/1h";r=0;t=3600');
  });

  it("a window listed twice is refused at its place", () => {
    expect(problems(rateLimit("windows:", "  - { capacity: 3, rate: 60s }", "  - { capacity: 4, rate: 1m }"))).toEqual([
      "policies/api.yaml:7: inbound[0].actions[0].config.windows[1]: repeats the length of an earlier window (keep the smaller capacity)",
    ]);
  });
});
