import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AGENT_HANDSHAKES_PER_MINUTE } from "../../../src/tunnels/agent-endpoint.ts";
import { TEST_KEYS } from "./keys.ts";

/** Sends `count` requests in parallel batches and returns their statuses in order (`onLimited`: each 429's body). */
async function statuses(count: number, make: (i: number) => Request, onLimited?: (body: { details?: { rate_limit?: string } }) => void): Promise<number[]> {
  const out: number[] = [];
  for (let start = 0; start < count; start += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, count - start) }, (_, i) => SELF.fetch(make(start + i))));
    for (const response of batch) {
      out.push(response.status);
      if (response.status === 429 && onLimited) onLimited(await response.json());
      else await response.body?.cancel();
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
    const authorization = (i: number) => (i % 2 === 0 ? `Bearer guess-${i % 3}` : `${spellings[i % 3]} ${TEST_KEYS.devPerIp.key}`);
    const make = (i: number, value = authorization(i)) =>
      new Request("http://127.0.0.1/nope", { headers: { "cf-connecting-ip": "203.0.113.201", authorization: value, "ngrok-version": "2" } });
    let refusedByIp = 0;
    const answers = await statuses(
      300,
      (i) => make(i),
      (body) => {
        if (body.details?.rate_limit === "management-per-ip") refusedByIp++;
      },
    );
    expect(answers.filter((status) => status !== 401 && status !== 404 && status !== 429)).toEqual([]);
    expect(count(answers, 401)).toBeGreaterThan(0);
    expect(count(answers, 404)).toBeGreaterThan(0);
    // With leases, a request may be refused while admissions are leased and not yet used or handed back, and
    // the admission it did not take is free again later: so the limit shows as "never more than 300 pass the
    // IP's bucket, and a fresh key meets it", not as "exactly the 301st".
    let limited: Response | undefined;
    let passedIp = answers.length - refusedByIp;
    for (let extra = 0; extra < 50 && limited === undefined; extra++) {
      const answer = await SELF.fetch(make(300 + extra, `Bearer a-fresh-key-${extra}`));
      if (answer.status === 429) limited = answer;
      else {
        passedIp++;
        await answer.body?.cancel();
      }
    }
    expect(passedIp).toBeLessThanOrEqual(300);
    expect(limited?.status).toBe(429);
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited!.json()).toMatchObject({ error_code: "ERR_SVC_226", details: { rate_limit: "management-per-ip" } });
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
