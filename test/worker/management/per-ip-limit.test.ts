import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AGENT_HANDSHAKES_PER_MINUTE } from "../../../src/tunnels/agent-endpoint.ts";
import { TEST_KEYS } from "./keys.ts";

/** Sends `count` requests in parallel batches and returns their statuses in order. */
async function statuses(count: number, make: (i: number) => Request): Promise<number[]> {
  const out: number[] = [];
  for (let start = 0; start < count; start += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, count - start) }, (_, i) => SELF.fetch(make(start + i))));
    for (const response of batch) {
      out.push(response.status);
      await response.body?.cancel();
    }
  }
  return out;
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

describe("one client IP stays limited whatever credentials it sends", () => {
  it("the management API limits one IP to 300 requests a minute whatever credentials each request carries", { timeout: 60_000 }, async () => {
    // Made-up keys, and a valid key in three spellings of its scheme: none reaches a per-key limit of 120,
    // the IP reaches 300.
    const spellings = ["bearer", "BEARER", "bEARER"];
    const authorization = (i: number) => (i % 2 === 0 ? `Bearer guess-${i % 3}` : `${spellings[i % 3]} ${TEST_KEYS.devPaging.key}`);
    const make = (i: number, value = authorization(i)) =>
      new Request("http://127.0.0.1/nope", { headers: { "cf-connecting-ip": "203.0.113.201", authorization: value, "ngrok-version": "2" } });
    const answers = await statuses(300, (i) => make(i));
    expect(answers.filter((status) => status !== 401 && status !== 404 && status !== 429)).toEqual([]);
    expect(count(answers, 401)).toBeGreaterThan(0);
    expect(count(answers, 404)).toBeGreaterThan(0);
    const limited = await SELF.fetch(make(300, "Bearer a-fresh-key"));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ error_code: "ERR_SVC_226", details: { rate_limit: "management-per-ip" } });
    const otherIp = await SELF.fetch(new Request("http://127.0.0.1/bot_users", { headers: { "cf-connecting-ip": "203.0.113.202", "service-version": "2" } }));
    expect(otherIp.status).toBe(401);
  });

  it(`the agent endpoint admits at most ${AGENT_HANDSHAKES_PER_MINUTE} handshakes a minute from one IP, counted before the key is checked`, {
    timeout: 60_000,
  }, async () => {
    const make = (i: number) =>
      new Request("http://127.0.0.1/__tollgate/agent", {
        headers: { "cf-connecting-ip": "203.0.113.203", upgrade: "websocket", authorization: `Bearer guess-${i}` },
      });
    const answers = await statuses(2 * AGENT_HANDSHAKES_PER_MINUTE, make);
    expect(count(answers, 401) + count(answers, 429)).toBe(answers.length);
    expect(count(answers, 401)).toBeGreaterThan(0);
    expect(count(answers, 401)).toBeLessThanOrEqual(AGENT_HANDSHAKES_PER_MINUTE);
    const limited = await SELF.fetch(make(-1));
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ details: { rate_limit: "agent-endpoint-per-ip" } });
  });
});
