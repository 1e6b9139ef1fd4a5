/**
 * POST /traffic_policy_simulations through the whole gateway: the committed /demo policy simulated over a sequence
 * recorded from the live route decides exactly as the live route did; a lower capacity shows its extra 429s; the
 * real buckets are untouched; validation errors are located as policy:check locates them.
 */

import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_SIMULATED_REQUESTS } from "../../../src/policy/simulate/index.ts";
import { call, callJson, expectError } from "./helpers.ts";

const committed: Record<string, string> = import.meta.glob("../../../policies/demo.yaml", { query: "?raw", import: "default", eager: true });
const demoPolicy = Object.values(committed)[0]!;

interface Decision {
  status: number | null;
  answered_by: string;
  actions: Array<{ type: string; outcome: string; rate_limit?: { retry_after: number; remaining: number } }>;
  headers: Record<string, string>;
}

/** What the live route answered one request: its status and the fields a decision shows. */
interface Recorded {
  at: number;
  status: number;
  headers: Record<string, string>;
}

async function liveDemo(ip: string, count: number): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for (let i = 0; i < count; i++) {
    const response = await SELF.fetch("http://127.0.0.1/demo/items", { headers: { "cf-connecting-ip": ip } });
    await response.body?.cancel();
    const headers: Record<string, string> = {};
    for (const name of ["retry-after", "ratelimit", "ratelimit-policy"]) {
      const value = response.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    out.push({ at: Date.now(), status: response.status, headers });
  }
  return out;
}

const asRequests = (ip: string, recorded: readonly Recorded[]) =>
  recorded.map((request) => ({
    method: "GET",
    url: "http://127.0.0.1/demo/items",
    client_ip: ip,
    at_ms: request.at - recorded[0]!.at,
    response: { status: 200, headers: { "content-type": "application/json" } },
  }));

const simulate = (json: unknown) =>
  callJson<{ decisions: Decision[]; stopped: unknown; buckets: number }>("POST", "/traffic_policy_simulations", 200, { json });

describe("POST /traffic_policy_simulations", () => {
  it("the committed /demo policy over a recorded sequence decides as the live route did; capacity 3 adds two 429s; real buckets untouched", async () => {
    const recorded = await liveDemo("198.51.100.61", 7);
    expect(recorded.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);

    const replay = await simulate({ policy: demoPolicy, origin: "operator", requests: asRequests("198.51.100.61", recorded) });
    expect(replay.decisions.map((d) => d.status)).toEqual(recorded.map((r) => r.status));
    expect(replay.decisions.map((d) => d.headers)).toEqual(recorded.map((r) => r.headers));
    expect(replay.decisions.map((d) => d.actions.map((a) => `${a.type}:${a.outcome}`).join(","))).toEqual([
      ...Array(5).fill("rate-limit:allowed,add-headers:continued"),
      "rate-limit:limited",
      "rate-limit:limited",
    ]);

    const stricter = await simulate({ policy: demoPolicy.replace("capacity: 5", "capacity: 3"), requests: asRequests("198.51.100.61", recorded) });
    expect(stricter.decisions.map((d) => d.status)).toEqual([200, 200, 200, 429, 429, 429, 429]);
    const extra = stricter.decisions.filter((d, i) => d.status === 429 && recorded[i]!.status !== 429);
    expect(extra.length).toBe(2);

    // A simulated flood from a client the live route has not seen leaves its real bucket empty.
    const fresh = "198.51.100.62";
    const flood = await simulate({
      policy: demoPolicy,
      requests: Array.from({ length: 20 }, (_, i) => ({ method: "GET", url: "http://127.0.0.1/demo/x", client_ip: fresh, at_ms: i })),
    });
    expect(flood.decisions.filter((d) => d.status === 429).length).toBe(15);
    const [real] = await liveDemo(fresh, 1);
    expect(real).toMatchObject({ status: 200, headers: { ratelimit: '"demo-per-client";r=4;t=60' } });
    // and the recorded client's real bucket is as the live requests left it: still full
    const [again] = await liveDemo("198.51.100.61", 1);
    expect(again!.status).toBe(429);
  });

  it("a policy that does not load is a 400 whose details locate each issue as policy:check does", async () => {
    const policy = demoPolicy.replace("rate: 60s", "rate: 65s");
    const line = policy.split("\n").findIndex((text) => text.includes("rate: 65s")) + 1;
    const envelope = await expectError(
      await call("POST", "/traffic_policy_simulations", { json: { policy, requests: [{ method: "GET", url: "http://127.0.0.1/demo" }] } }),
      400,
      215,
    );
    const where = `policy:${line}: inbound[0].actions[0].config.rate: must be a multiple of 10s`;
    expect(envelope.msg).toBe(`The field 'policy' does not load: ${where}`);
    expect(envelope.details).toMatchObject({
      field: "policy",
      issues: [{ line, path: "inbound[0].actions[0].config.rate", message: "must be a multiple of 10s", text: where }],
    });
  });

  it("a bad request field is named; an unknown one too; too many requests are refused", async () => {
    const one = { method: "GET", url: "http://127.0.0.1/demo" };
    await expectError(
      await call("POST", "/traffic_policy_simulations", {
        json: {
          policy: demoPolicy,
          requests: [
            { ...one, at_ms: 5 },
            { ...one, at_ms: 1 },
          ],
        },
      }),
      400,
      215,
      "The field 'requests[1].at_ms' must not be before the previous request's (5): requests run in order.",
    );
    await expectError(
      await call("POST", "/traffic_policy_simulations", { json: { policy: demoPolicy, requests: [{ ...one, url: "/relative" }] } }),
      400,
      215,
      /requests\[0\]\.url/,
    );
    await expectError(
      await call("POST", "/traffic_policy_simulations", { json: { policy: demoPolicy, request: [one] } }),
      400,
      214,
      /'request'.*did you mean 'requests'/,
    );
    const many = Array.from({ length: MAX_SIMULATED_REQUESTS + 1 }, () => ({ method: "GET", url: "http://a.b/" }));
    await expectError(
      await call("POST", "/traffic_policy_simulations", { json: { policy: demoPolicy, requests: many } }),
      400,
      215,
      `The field 'requests' exceeds the limit of ${MAX_SIMULATED_REQUESTS} requests per simulation.`,
    );
  });

  it("needs an API key and the version header, as every operation; another account simulates just the same", async () => {
    const json = { policy: demoPolicy, requests: [{ method: "GET", url: "http://127.0.0.1/demo" }] };
    expect((await call("POST", "/traffic_policy_simulations", { json, key: null })).status).toBe(401);
    expect((await call("POST", "/traffic_policy_simulations", { json, version: null })).status).toBe(400);
    expect((await call("POST", "/traffic_policy_simulations", { json, key: "other" })).status).toBe(200);
    expect((await call("GET", "/traffic_policy_simulations")).status).toBe(405);
  });
});

describe("simulations per API key", () => {
  it("an API key starts at most 10 simulations a minute: the 11th is answered 429 before its body is read", async () => {
    // Any Authorization value has its bucket (the limit runs before the key is checked), so this one is the test's own.
    const headers = { authorization: "Bearer simulation-flood-test", "content-type": "application/json", "service-version": "2" };
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const response = await SELF.fetch("http://127.0.0.1/traffic_policy_simulations", { method: "POST", headers, body: "{}" });
      await response.body?.cancel();
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 10).every((status) => status !== 429)).toBe(true);
    expect(statuses[10]).toBe(429);
  });
});

describe("text that is not well-formed Unicode", () => {
  it("an unpaired surrogate in the policy or a header is refused 400, naming the field, before anything runs", async () => {
    const policy = await callJson<{ msg: string }>("POST", "/traffic_policy_simulations", 400, {
      key: "devSecond",
      json: { policy: "inbound: []\n# \ud800", requests: [{ method: "GET", url: "https://api.example.com/" }] },
    });
    expect(policy.msg).toContain("'policy'");
    expect(policy.msg).toContain("well-formed");
    const header = await callJson<{ msg: string }>("POST", "/traffic_policy_simulations", 400, {
      key: "devSecond",
      json: { policy: "inbound: []\n", requests: [{ method: "GET", url: "https://api.example.com/", headers: { "x-a": "\udc00" } }] },
    });
    expect(header.msg).toContain("'requests[0].headers.x-a'");
  });
});
