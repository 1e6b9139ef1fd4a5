/**
 * Edge decisions end to end: the Worker under `wrangler dev`, the real agent in-process, a real local upstream.
 * A tunnel's rate limit answers 429 at the edge; the agent captures it, marked as answered at the edge, with
 * the entry, the action and the rate-limit variables, and a relayed request carries the decision it passed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";
import { Edge } from "./support/edge.ts";
import { fetchPublic } from "./support/public-client.ts";

let edge: Edge;
let upstream: Upstream;
let agent: Agent;

const policy = {
  inbound: [
    {
      name: "two per client",
      actions: [
        {
          type: "rate-limit",
          config: { name: "per-client", algorithm: "sliding_window", capacity: 2, rate: "60s", bucket_key: ["req.headers['x-client'][0]"] },
        },
      ],
    },
  ],
};

beforeAll(async () => {
  [edge, upstream] = await Promise.all([Edge.start(), startUpstream()]);
  const parsed = parseAgentConfig({
    server_addr: edge.url,
    web_addr: "127.0.0.1:0",
    tunnels: { web: { proto: "http", addr: upstream.port, traffic_policy: policy } },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  agent = await startAgent({
    config: parsed.config,
    tunnels: Object.entries(parsed.config.tunnels).map(([name, definition]) => ({ name, definition })),
    backoff: { initialMs: 100, maxMs: 1000 },
  });
  await agent.ready;
});

afterAll(async () => {
  await agent?.stop();
  await upstream?.close();
  await edge?.dispose();
});

async function captured(): Promise<any[]> {
  const response = await fetch(`${agent.apiUrl}/api/requests/http?limit=100`);
  return ((await response.json()) as { requests: any[] }).requests;
}

describe("requests the edge answered itself reach the agent", () => {
  it("a 429 at the edge is captured with its entry, action and variables; relayed ones carry what they passed", async () => {
    const publicUrl = agent.tunnels.list()[0].publicUrl!;
    const headers = { "x-client": "alice" };
    for (let i = 0; i < 2; i++) expect((await fetchPublic(edge.url, publicUrl, `/ok/${i}`, { headers })).status).toBe(200);
    const limited = await fetchPublic(edge.url, publicUrl, "/limited?q=1", { headers });
    expect(limited.status).toBe(429);

    await vi.waitFor(async () => expect((await captured()).find((each) => each.request.uri === "/limited?q=1")).toBeDefined(), {
      timeout: 10_000,
      interval: 100,
    });
    const requests = await captured();
    const atEdge = requests.find((each) => each.request.uri === "/limited?q=1");
    expect(atEdge.response).toMatchObject({ status_code: 429 });
    expect(atEdge.edge_decision).toEqual({
      answered_at_edge: true,
      phase: "inbound",
      entry: 0,
      entry_name: "two per client",
      action: 0,
      action_type: "rate-limit",
      more_like_it: 0,
    });
    expect(atEdge.rate_limits).toEqual([
      expect.objectContaining({
        name: "per-client",
        bucket_key: "alice",
        limited: true,
        outcome: "limited",
        retry_after: Number(limited.headers["retry-after"]),
        capacity: 2,
      }),
    ]);
    const relayed = requests.find((each) => each.request.uri === "/ok/1");
    expect(relayed.edge_decision).toBeNull();
    expect(relayed.rate_limits).toEqual([
      expect.objectContaining({ name: "per-client", bucket_key: "alice", limited: false, outcome: "allowed", remaining: 0 }),
    ]);
    // the decision travelled in the request frame's metadata, not as a header the upstream saw
    expect(Object.keys(relayed.request.headers).filter((name) => /decision/i.test(name))).toEqual([]);
  });
});
