/**
 * A live override under `wrangler dev` (as `npm start` runs it), with real processes: a busy bucket on /demo (5 a
 * minute) is raised, lowered and given back its own limit through the management API, and the first request sent
 * a second after each answer is decided by the new limit.
 */

import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEV_KEY, Edge } from "./support/edge.ts";
import { waitPast } from "../shared/wait-past.ts";

let edge: Edge;

beforeAll(async () => {
  edge = await Edge.start();
});

afterAll(async () => {
  await edge?.dispose();
});

const IP = "198.51.100.77";
const headers = { authorization: `Bearer ${DEV_KEY}`, "service-version": "2", "content-type": "application/json" };

async function demo(): Promise<{ status: number; policy: string | null }> {
  const response = await fetch(`${edge.url}/demo`, { headers: { "cf-connecting-ip": IP } });
  await response.arrayBuffer();
  return { status: response.status, policy: response.headers.get("ratelimit-policy") };
}

/** Calls the API and returns when it answered (the clock of this process, the one that sends the next request). */
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any; answeredAt: number }> {
  const response = await fetch(`${edge.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined, answeredAt: Date.now() };
}

describe("a live override on a busy bucket under wrangler dev", () => {
  it("raises, lowers and gives back the limit; the first request a second after each answer follows it", async () => {
    // The busy bucket: requests keep arriving on it throughout (4 at a time), whatever they are answered.
    let busy = true;
    const sent = { count: 0 };
    const load = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (busy) {
          await demo();
          sent.count++;
        }
      }),
    );
    try {
      await vi.waitFor(async () => expect((await demo()).status).toBe(429), { timeout: 30_000, interval: 50 });

      const raised = await api("POST", "/rate_limit_overrides", {
        edge_id: "edghts_local",
        route_id: "edghtsrt_demo",
        action: "demo-per-client",
        bucket_key: IP,
        capacity: 100_000,
        rate: "60s",
        description: "e2e: raised",
      });
      expect(raised.status).toBe(201);
      await waitPast(raised.answeredAt + 1000);
      expect(await demo()).toEqual({ status: 200, policy: '"demo-per-client";q=100000;w=60' });

      // The bucket keeps counting under the raised limit: read back until it holds more than the next limit.
      const read = `/edges/https/edghts_local/routes/edghtsrt_demo/rate_limit_buckets?action=demo-per-client&bucket_key=${IP}`;
      await vi.waitFor(
        async () => {
          const reading = await api("GET", read);
          expect(reading.status, JSON.stringify(reading.json)).toBe(200);
          expect(reading.json.override?.id).toBe(raised.json.id);
          expect(reading.json.windows[0].used).toBeGreaterThan(50);
        },
        { timeout: 30_000, interval: 500 },
      );

      const lowered = await api("PATCH", `/rate_limit_overrides/${raised.json.id}`, { capacity: 50, rate: "60s" });
      expect(lowered.status).toBe(200);
      await waitPast(lowered.answeredAt + 1000);
      expect(await demo()).toEqual({ status: 429, policy: '"demo-per-client";q=50;w=60' });

      const deleted = await api("DELETE", `/rate_limit_overrides/${raised.json.id}`);
      expect(deleted.status).toBe(204);
      await waitPast(deleted.answeredAt + 1000);
      expect(await demo()).toEqual({ status: 429, policy: '"demo-per-client";q=5;w=60' });
    } finally {
      busy = false;
      await load;
    }
    expect(sent.count).toBeGreaterThan(0);
  });
});
