/**
 * A burst of requests on one store object, of one client or of many: requests that find a call out on their
 * bucket's object ride the next one (src/limiter/calls-in-flight.ts), so the object is called a few times instead
 * of once a request, and decides exactly as before. Once through the pipeline with one isolate memory, and once through the real Worker
 * (SELF), where every request is its own request to the runtime: no answer passes between them but plain data.
 */

import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { upstreamHandlers } from "../../../src/worker.ts";
import { newIsolate, send, singleEdge } from "./harness.ts";

const policy = `
inbound:
  - actions:
      - type: rate-limit
        config:
          name: burst
          capacity: 10
          rate: 60s
          bucket_key: [conn.client_ip]
`;

async function stats(): Promise<{ objectCalls: number; takesCarried: number }> {
  const response = await SELF.fetch("http://127.0.0.1/__tollgate/stats");
  expect(response.status).toBe(200);
  return (await response.json()) as { objectCalls: number; takesCarried: number };
}

describe("a burst on one store object", () => {
  it("15 requests at once on a capacity of 10: exactly 10 admitted, in a few object calls", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": policy });
    const isolate = newIsolate();
    const request = () => new Request("http://gw.test/x", { headers: { "cf-connecting-ip": "198.51.100.40" } });
    const responses = await Promise.all(Array.from({ length: 15 }, () => send(routes, request(), {}, upstreamHandlers, isolate)));
    const statuses = responses.map((response) => response.status).sort();
    for (const response of responses) await response.body?.cancel();
    expect(statuses).toEqual([...Array(10).fill(200), ...Array(5).fill(429)]);
    const { objectCalls, takesCarried } = isolate.buckets.stats;
    expect(objectCalls + takesCarried).toBe(15);
    expect(objectCalls).toBeLessThanOrEqual(5);
  });

  it("through the Worker, 30 requests at once from one client on the committed /demo limit (5 a minute): exactly 5 admitted, none uncounted", async () => {
    const before = await stats();
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => SELF.fetch("http://127.0.0.1/demo", { headers: { "cf-connecting-ip": "203.0.113.77" } })),
    );
    const statuses = responses.map((response) => response.status).sort();
    for (const response of responses) await response.body?.cancel();
    // A request whose count failed would proceed (200) with the error variables set: a sixth 200 would show it.
    expect(statuses).toEqual([...Array(5).fill(200), ...Array(25).fill(429)]);
    const after = await stats();
    expect(after.takesCarried - before.takesCarried).toBeGreaterThan(0);
    expect(after.objectCalls - before.objectCalls).toBeLessThan(30);
  });

  it("through the Worker, 6 requests at once from each of 20 clients on /demo (5 a minute): exactly 5 admitted a client, in fewer calls than requests", async () => {
    const before = await stats();
    const ips = Array.from({ length: 20 }, (_, i) => `198.51.100.${100 + i}`);
    const sent = ips.flatMap((ip) => Array.from({ length: 6 }, () => ip));
    const responses = await Promise.all(sent.map((ip) => SELF.fetch("http://127.0.0.1/demo", { headers: { "cf-connecting-ip": ip } })));
    const admitted = new Map<string, number>();
    for (const [i, response] of responses.entries()) {
      expect([200, 429]).toContain(response.status);
      if (response.status === 200) admitted.set(sent[i]!, (admitted.get(sent[i]!) ?? 0) + 1);
      await response.body?.cancel();
    }
    expect(ips.map((ip) => admitted.get(ip) ?? 0)).toEqual(ips.map(() => 5));
    const after = await stats();
    // Takes of different clients whose buckets share an object ride one call (4 objects hold this action's buckets).
    expect(after.objectCalls - before.objectCalls).toBeLessThan(sent.length);
    expect(after.takesCarried - before.takesCarried).toBeGreaterThan(0);
  });
});
