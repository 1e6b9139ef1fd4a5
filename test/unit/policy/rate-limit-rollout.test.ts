/**
 * Rolling a limit out: `enforce: false` decides exactly as `enforce: true` would (replayed decision by decision
 * on the gateway's real limiter path, leases included), ngrok's phase names behave as inbound/outbound, and
 * RateLimit header fields parse as Structured Fields carrying the limiter's numbers.
 */

import fc from "fast-check";
import { parseList } from "structured-headers";
import { describe, expect, it } from "vitest";
import type { CompiledPolicy } from "../../../src/policy/compile.ts";
import { runPhase } from "../../../src/policy/evaluate.ts";
import type { ActionServices, Exchange, RateLimitEvent } from "../../../src/policy/exchange.ts";
import { withRateLimitFields } from "../../../src/policy/rate-limit-fields.ts";
import { makeExchange } from "../support/exchange.ts";
import { LeasingCounter } from "../support/leasing-counter.ts";
import { MemoryCounter } from "../support/memory-counter.ts";
import { lines, load, POLICY_FILE as FILE, problems } from "../support/policy-text.ts";

/** Aligned to the 1s sub-windows of a 60s window. */
const T0 = 1_700_000_000_000;

/** A shadow-able limit, and a later entry that acts on `limited`. */
const limitThenMark = (enforce: boolean, capacity: number) =>
  lines(
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config:",
    "          name: per-client",
    `          capacity: ${capacity}`,
    "          rate: 60s",
    `          enforce: ${enforce}`,
    "  - expressions: ['actions.svc.rate_limit.limited']",
    "    actions:",
    "      - type: add-headers",
    "        config: { headers: { x-over-limit: 'yes' } }",
  );

interface Step {
  readonly gapMs: number;
  readonly client: number;
}

/** What one request came to: 429 or on its way, and what the later entry saw. */
interface Outcome {
  readonly status: number | "passed";
  readonly limited: boolean;
  readonly marked: boolean;
  readonly bucketKey: string;
}

async function replay(policy: CompiledPolicy, steps: readonly Step[]): Promise<Outcome[]> {
  const clock = { now: T0 };
  const services: ActionServices = { counter: new LeasingCounter(clock) };
  const out: Outcome[] = [];
  for (const step of steps) {
    clock.now += step.gapMs;
    const exchange = makeExchange({ clientIp: `198.51.100.${step.client}` });
    const response = await runPhase(policy.inbound, exchange, services);
    out.push({
      status: response ? response.status : "passed",
      limited: exchange.vars.rate_limit.limited,
      marked: exchange.request.headers.get("x-over-limit") === "yes",
      bucketKey: exchange.vars.rate_limit.bucket_key,
    });
  }
  return out;
}

describe("enforce: false (shadow mode)", () => {
  it("sets limited exactly where enforce: true answers 429, never answers itself, and a later entry sees it", async () => {
    // Bursts several times a second (leases granted and used) and pauses past the window.
    const steps: Step[] = [
      ...Array.from({ length: 120 }, (_, i) => ({ gapMs: 20, client: i % 3 })),
      { gapMs: 61_000, client: 0 },
      ...Array.from({ length: 60 }, (_, i) => ({ gapMs: 300, client: i % 2 })),
    ];
    const enforced = await replay(load(limitThenMark(true, 30)), steps);
    const shadow = await replay(load(limitThenMark(false, 30)), steps);
    expect(enforced.filter((outcome) => outcome.status === 429).length).toBeGreaterThan(0);
    for (const [i, outcome] of enforced.entries()) {
      expect({ i, limited: shadow[i].limited, status: shadow[i].status }).toEqual({ i, limited: outcome.status === 429, status: "passed" });
      expect(shadow[i].marked).toBe(outcome.status === 429);
      expect(shadow[i].bucketKey).toBe(outcome.bucketKey);
      // With enforce: true the phase ends at the 429, so the marking entry never runs.
      expect(outcome.marked).toBe(false);
    }
  });

  it("any request sequence gets the same decisions with enforce on and off (property)", async () => {
    const step = fc.record({ gapMs: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 70_000 })), client: fc.integer({ min: 0, max: 2 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 150 }), fc.integer({ min: 1, max: 40 }), async (steps, capacity) => {
        const enforced = await replay(load(limitThenMark(true, capacity)), steps);
        const shadow = await replay(load(limitThenMark(false, capacity)), steps);
        expect(shadow.map((outcome) => outcome.limited)).toEqual(enforced.map((outcome) => outcome.status === 429));
        expect(shadow.every((outcome) => outcome.status === "passed")).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it("reports would-be-limited decisions as shadow_limited, others as allowed", async () => {
    const events: RateLimitEvent[] = [];
    const services: ActionServices = {
      counter: new MemoryCounter(T0),
      decisions: { rateLimit: (event) => events.push(event), log: () => undefined },
    };
    const policy = load(limitThenMark(false, 1));
    for (let i = 0; i < 2; i++) await runPhase(policy.inbound, makeExchange(), services);
    expect(events.map(({ outcome, enforce, retryAfter, remaining }) => ({ outcome, enforce, retryAfter, remaining }))).toEqual([
      { outcome: "allowed", enforce: false, retryAfter: 0, remaining: 0 },
      { outcome: "shadow_limited", enforce: false, retryAfter: 60, remaining: 0 },
    ]);
  });

  it("enforce must be a boolean", () => {
    expect(
      problems(
        lines(
          "inbound:",
          "  - actions:",
          "      - type: rate-limit",
          "        config:",
          "          capacity: 1",
          "          rate: 60s",
          "          enforce: 'no'",
        ),
      ),
    ).toEqual([`${FILE}:7: inbound[0].actions[0].config.enforce: must be a boolean, got string "no"`]);
  });
});

type Style = "tollgate" | "ngrok";
const PHASES: Record<Style, [string, string]> = { tollgate: ["inbound", "outbound"], ngrok: ["on_http_request", "on_http_response"] };

/** The same document in either phase style: `entries` are lines under the inbound key, `outbound` under the outbound one. */
function written(style: Style, inbound: readonly string[], outbound: readonly string[] = []): string {
  const [request, response] = PHASES[style];
  return lines(inbound.length > 0 ? `${request}:` : `${request}: []`, ...inbound, ...(outbound.length > 0 ? [`${response}:`, ...outbound] : []));
}

describe.each<Style>(["tollgate", "ngrok"])("phase names: %s style", (style) => {
  const [request, response] = PHASES[style];

  it("a limit without a name, a marker entry and an outbound header behave as in the inbound/outbound form", async () => {
    const document = (s: Style) =>
      written(
        s,
        ["  - actions:", "      - type: rate-limit", "        config: { capacity: 2, rate: 60s }"],
        ["  - actions:", "      - type: add-headers", "        config: { headers: { x-served-by: tollgate } }"],
      );
    const run = async (s: Style) => {
      const policy = load(document(s));
      const counter = new MemoryCounter(T0);
      const seen: unknown[] = [];
      for (let i = 0; i < 3; i++) {
        const exchange = makeExchange({ response: { status: 200 } });
        const answer = await runPhase(policy.inbound, exchange, { counter });
        await runPhase(policy.outbound, exchange, { counter });
        seen.push({ status: answer?.status ?? 200, served: exchange.response?.headers.get("x-served-by"), limited: exchange.vars.rate_limit.limited });
      }
      return { seen, buckets: counter.calls };
    };
    const ours = await run("tollgate");
    expect(await run(style)).toEqual(ours);
    // The bucket is named by the canonical position, so switching styles keeps counting in the same buckets.
    expect(ours.buckets[0].action).toBe("inbound[0].actions[0]");
  });

  it("an outbound-phase rate limit replaces the over-limit response by the 429", async () => {
    const policy = load(written(style, [], ["  - actions:", "      - type: rate-limit", "        config: { name: responses, capacity: 1, rate: 60s }"]));
    const counter = new MemoryCounter(T0);
    expect(await runPhase(policy.outbound, makeExchange({ response: { status: 200 } }), { counter })).toBeUndefined();
    expect((await runPhase(policy.outbound, makeExchange({ response: { status: 200 } }), { counter }))?.status).toBe(429);
  });

  it("a bad value is reported at the path the document uses", () => {
    expect(problems(written(style, ["  - actions:", "      - type: rate-limit", "        config:", "          capacity: 1", "          rate: 61s"]))).toEqual([
      `${FILE}:6: ${request}[0].actions[0].config.rate: must be a multiple of 10s`,
    ]);
  });

  it("a response variable in a request-phase expression is reported at the path the document uses", () => {
    expect(problems(written(style, ["  - expressions: ['res.status_code == 200']", "    actions:", "      - type: deny"]))).toEqual([
      `${FILE}:2: ${request}[0].expressions[0]: invalid CEL: res is only available in outbound expressions`,
    ]);
  });

  it("an entry without actions in the response phase is reported there", () => {
    expect(problems(written(style, [], ["  - actions: []"]))).toEqual([`${FILE}:3: ${response}[0].actions: must have at least 1 action`]);
  });
});

describe("mixing phase styles", () => {
  it("inbound with on_http_request is refused at the ngrok-style key", () => {
    expect(problems(lines("inbound:", "  - actions: [{ type: deny }]", "on_http_request:", "  - actions: [{ type: deny }]"))).toEqual([
      `${FILE}:3: on_http_request: cannot be mixed with inbound/outbound in one document: use on_http_request/on_http_response or inbound/outbound`,
    ]);
  });

  it("outbound with on_http_response is refused too", () => {
    expect(problems(lines("on_http_response: []", "outbound: []"))).toEqual([
      `${FILE}:1: on_http_response: cannot be mixed with inbound/outbound in one document: use on_http_request/on_http_response or inbound/outbound`,
    ]);
  });

  it("on_http_request with on_http_response is one style and loads", () => {
    expect(problems(lines("on_http_request: []", "on_http_response: []"))).toEqual([]);
  });
});

/** Two limits that opt in, and one that does not. */
const withHeaders = lines(
  "inbound:",
  "  - actions:",
  "      - type: rate-limit",
  "        config: { name: per-client, capacity: 3, rate: 60s, ratelimit_headers: true }",
  "      - type: rate-limit",
  "        config: { name: quiet, capacity: 100, rate: 60s }",
  "      - type: rate-limit",
  '        config: { name: "hourly \\"burst\\"", capacity: 1000, rate: 1h, ratelimit_headers: true }',
);

function parsed(response: Response, field: string) {
  return parseList(response.headers.get(field) ?? "").map(([value, params]) => ({ policy: value, ...(Object.fromEntries(params) as Record<string, number>) }));
}

describe("RateLimit header fields", () => {
  it("carry one member per opted-in limit, parse as Structured Fields, and count down with the limiter", async () => {
    const policy = load(withHeaders);
    const counter = new MemoryCounter(T0);
    const answers: Response[] = [];
    for (let i = 0; i < 4; i++) {
      counter.now = T0 + i * 10_000;
      const exchange: Exchange = makeExchange();
      const rejected = await runPhase(policy.inbound, exchange, { counter });
      answers.push(withRateLimitFields(rejected ?? new Response("ok"), exchange));
    }
    for (const answer of answers.slice(0, 3)) {
      expect(parsed(answer, "ratelimit-policy")).toEqual([
        { policy: "per-client", q: 3, w: 60 },
        { policy: 'hourly "burst"', q: 1000, w: 3600 },
      ]);
    }
    // The 429 ends the phase before the hourly limit runs: only the limit that answered is listed.
    expect(parsed(answers[3], "ratelimit-policy")).toEqual([{ policy: "per-client", q: 3, w: 60 }]);
    // The first admission, at T0, is alone in its sub-window, which stops counting at T0 + 60s.
    expect(answers.map((answer) => parsed(answer, "ratelimit")[0])).toEqual([
      { policy: "per-client", r: 2, t: 60 },
      { policy: "per-client", r: 1, t: 50 },
      { policy: "per-client", r: 0, t: 40 },
      { policy: "per-client", r: 0, t: 30 },
    ]);
    expect(answers[3].status).toBe(429);
    expect(answers[3].headers.get("retry-after")).toBe("30");
    // The hourly limit ran only while the per-client one admitted. Its sub-windows are 60s long and T0 lies
    // 20s into one, [T0 - 20s, T0 + 40s): all three admissions share it, and it counts whole until its latest
    // admission is an hour old, an hour from each answer.
    expect(answers.map((answer) => parsed(answer, "ratelimit")[1])).toEqual([
      { policy: 'hourly "burst"', r: 999, t: 3600 },
      { policy: 'hourly "burst"', r: 998, t: 3600 },
      { policy: 'hourly "burst"', r: 997, t: 3600 },
      undefined,
    ]);
  });

  it("are added to an upstream response whose headers are immutable", async () => {
    const exchange = makeExchange();
    await runPhase(load(withHeaders).inbound, exchange, { counter: new MemoryCounter(T0) });
    const upstream = Response.redirect("https://origin.test/next", 302);
    expect(() => upstream.headers.set("x", "1")).toThrow();
    const answer = withRateLimitFields(upstream, exchange);
    expect(answer.status).toBe(302);
    expect(answer.headers.get("location")).toBe("https://origin.test/next");
    expect(parsed(answer, "ratelimit")[0]).toEqual({ policy: "per-client", r: 2, t: 60 });
  });

  it("are absent unless a limit opts in, and when counting failed", async () => {
    const quiet = makeExchange();
    await runPhase(load(lines("inbound:", "  - actions:", "      - type: rate-limit", "        config: { capacity: 3, rate: 60s }")).inbound, quiet, {
      counter: new MemoryCounter(T0),
    });
    const failed = makeExchange();
    await runPhase(load(withHeaders).inbound, failed, { counter: { count: async () => ({ ok: false, code: "ERR_RATE_LIMIT_TIMEOUT", message: "late" }) } });
    for (const exchange of [quiet, failed]) {
      const answer = withRateLimitFields(new Response("ok"), exchange);
      expect([answer.headers.has("ratelimit"), answer.headers.has("ratelimit-policy")]).toEqual([false, false]);
    }
  });

  it("a leased admission reports what the object had left plus what this isolate still holds", async () => {
    const clock = { now: T0 };
    const counter = new LeasingCounter(clock);
    const policy = load(
      lines("inbound:", "  - actions:", "      - type: rate-limit", "        config: { name: busy, capacity: 1000, rate: 60s, ratelimit_headers: true }"),
    );
    const steps: Array<{ remaining: number; askedObject: boolean }> = [];
    for (let i = 0; i < 60; i++) {
      clock.now += 50;
      const calls = counter.buckets.stats.objectCalls;
      const exchange = makeExchange();
      await runPhase(policy.inbound, exchange, { counter });
      steps.push({ remaining: exchange.rateLimitFields![0].remaining, askedObject: counter.buckets.stats.objectCalls > calls });
    }
    expect(steps[0].remaining).toBe(999);
    expect(counter.buckets.stats.leasedAdmissions).toBeGreaterThan(0);
    for (let i = 1; i < steps.length; i++) {
      const drop = steps[i - 1].remaining - steps[i].remaining;
      // One admission per request, answered from a lease or not; a lease that expired with admissions unused
      // loses them (counted, never used): that shows, and only shows, when the object is asked again.
      if (steps[i].askedObject) expect(drop).toBeGreaterThanOrEqual(1);
      else expect(drop).toBe(1);
    }
  });

  it("ratelimit_headers must be a boolean", () => {
    expect(
      problems(
        lines(
          "inbound:",
          "  - actions:",
          "      - type: rate-limit",
          "        config:",
          "          capacity: 1",
          "          rate: 60s",
          "          ratelimit_headers: 1",
        ),
      ),
    ).toEqual([`${FILE}:7: inbound[0].actions[0].config.ratelimit_headers: must be a boolean, got number 1`]);
  });

  it("a name that an sf-string cannot carry is refused when the limit sends headers", () => {
    expect(
      problems(
        lines(
          "inbound:",
          "  - actions:",
          "      - type: rate-limit",
          "        config:",
          "          name: 'per-clïent'",
          "          capacity: 1",
          "          rate: 60s",
          "          ratelimit_headers: true",
        ),
      ),
    ).toEqual([
      `${FILE}:5: inbound[0].actions[0].config.name: must be printable ASCII of at most 128 characters when ratelimit_headers is true (it names the policy in the RateLimit fields)`,
    ]);
  });

  it("a name of 129 characters is refused when the limit sends headers", () => {
    expect(
      problems(
        lines(
          "inbound:",
          "  - actions:",
          "      - type: rate-limit",
          "        config:",
          `          name: ${"n".repeat(129)}`,
          "          capacity: 1",
          "          rate: 60s",
          "          ratelimit_headers: true",
        ),
      ),
    ).toEqual([
      `${FILE}:5: inbound[0].actions[0].config.name: must be printable ASCII of at most 128 characters when ratelimit_headers is true (it names the policy in the RateLimit fields)`,
    ]);
  });

  it("the same name loads when the limit sends no headers", () => {
    expect(
      problems(
        lines(
          "inbound:",
          "  - actions:",
          "      - type: rate-limit",
          "        config:",
          "          name: 'per-clïent'",
          "          capacity: 1",
          "          rate: 60s",
        ),
      ),
    ).toEqual([]);
  });

  it("a ninth limit with headers in one policy is refused", () => {
    const limits = Array.from({ length: 9 }, (_, i) => [
      `      - type: rate-limit`,
      `        config: { name: l${i}, capacity: 1, rate: 60s, ratelimit_headers: true }`,
    ]).flat();
    expect(problems(lines("inbound:", "  - actions:", ...limits))).toEqual([
      `${FILE}:20: inbound[0].actions[8].config.ratelimit_headers: exceeds the limit of 8 rate-limit actions with ratelimit_headers per policy`,
    ]);
  });
});
