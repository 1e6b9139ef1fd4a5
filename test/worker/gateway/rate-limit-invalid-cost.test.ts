import { describe, expect, it } from "vitest";
import { MAX_COST_REASON_SHOWN } from "../../../src/policy/actions/rate-limit-invalid-cost.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { send, singleEdge } from "./harness.ts";

/** A route to `echo` whose rate-limit charges x-cost, 10 a minute and 1,000 a day (several windows). */
function costed(enforce = true) {
  const policy = `
inbound:
  - actions:
      - type: rate-limit
        config:
          name: tokens
          enforce: ${enforce}
          bucket_key: ["getReqHeader('x-api-key')"]
          cost: "int(getReqHeader('x-cost')[0])"
          ratelimit_headers: true
          windows: [{ capacity: 10, rate: 60s }, { capacity: 1000, rate: 24h }]
      - type: add-headers
        config:
          headers:
            x-cost-error: "\${actions.ngrok.rate_limit.error.code}: \${actions.ngrok.rate_limit.error.message}"
`;
  return singleEdge("      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n", { "policies/limit.yaml": policy });
}

const request = (cost: string) => new Request("http://gw.test/v1", { headers: { "x-api-key": "k1", "x-cost": cost } });

interface Envelope {
  error_code: string;
  msg: string;
  details: { rate_limit: string; retry_after: number; cost_error: string };
}

describe("a cost invalid at request time, through the Worker", () => {
  it("answers 429 saying what was wrong with the cost, retry-after 1 while the bucket has room, and counts nothing", async () => {
    const routes = costed();
    const refused = await send(routes, request("abc"), {}, upstreamHandlers);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    const body = (await refused.json()) as Envelope;
    expect(body.error_code).toBe("ERR_SVC_226");
    expect(body.msg).toBe(
      "Rate limit refused the request: its cost is invalid (cost: Cannot convert abc to a BigInt). Send a cost from 0 to 1000000; a valid request may be admitted in 1s.",
    );
    expect(body.details).toMatchObject({ rate_limit: "tokens", retry_after: 1, cost_error: "cost: Cannot convert abc to a BigInt" });
    // The RateLimit fields are the bucket's: all 10 of the minute remain.
    expect(refused.headers.get("ratelimit")).toContain("r=10");
    for (const cost of ["-1", String(2 ** 53), "1.5"]) {
      const response = await send(routes, request(cost), {}, upstreamHandlers);
      expect(response.status).toBe(429);
      expect(((await response.json()) as Envelope).details.cost_error).toMatch(/^cost/);
    }
    const whole = await send(routes, request("10"), {}, upstreamHandlers);
    expect(whole.status).toBe(200);
    await whole.text();
  });

  it("on an exhausted bucket, retry-after is when a valid cost of 1 fits again, not the longest window", async () => {
    const routes = costed();
    const spent = await send(routes, request("10"), {}, upstreamHandlers);
    await spent.text();
    const refused = await send(routes, request("garbage"), {}, upstreamHandlers);
    expect(refused.status).toBe(429);
    // The minute drains in at most 60 s; the day (the longest window, 86,400 s) has room.
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(((await refused.json()) as Envelope).msg).toContain(`a valid request may be admitted in ${retryAfter}s.`);
  });

  it("shows at most a bounded part of a long cost input, and keeps the reason in the error variables", async () => {
    const routes = costed(false);
    const long = "z".repeat(5000);
    // enforce: false lets it through uncounted; the next action writes the error variables into a header.
    const passed = await send(routes, request(long), {}, upstreamHandlers);
    expect(passed.status).toBe(200);
    const echoed = (await passed.json()) as { headers: Record<string, string> };
    expect(echoed.headers["x-cost-error"]).toMatch(/^ERR_RATE_LIMIT_COST: cost: Cannot convert z+/);
    const enforced = await send(costed(), request(long), {}, upstreamHandlers);
    const text = await enforced.text();
    const body = JSON.parse(text) as Envelope;
    expect(body.details.cost_error).toMatch(
      new RegExp(`^cost: Cannot convert z{${MAX_COST_REASON_SHOWN - "cost: Cannot convert ".length}}… \\(\\d+ more characters\\)$`),
    );
    expect(text.length).toBeLessThan(1000);
  });
});
