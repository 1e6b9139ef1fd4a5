/**
 * Request inspection end to end: the Worker under `wrangler dev`, the agent in-process, a real local
 * service. A request through a tunnel is captured and shown (API, the published ngrok client, the live
 * feed the inspector page reads); replay reaches the local service again as a new capture; delete empties
 * both; and the size bound holds under a flood through the real relay. One edge for the file.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { ngrokRequestClient, type NgrokRequestClient } from "../agent/support/ngrok-request-client.ts";
import { patternBytes, sha256, startUpstream, type Upstream } from "../support/upstream.ts";
import { Edge } from "./support/edge.ts";
import { fetchPublic, jsonOf } from "./support/public-client.ts";

const MiB = 1024 * 1024;
const INSPECT_DB_SIZE = 2 * MiB;

let edge: Edge;
let upstream: Upstream;
let agent: Agent;
let client: NgrokRequestClient;
let publicUrl: string;

beforeAll(async () => {
  [edge, upstream] = await Promise.all([Edge.start(), startUpstream()]);
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0", inspect_db_size: INSPECT_DB_SIZE });
  if (!parsed.ok) throw new Error("bad test config");
  agent = await startAgent({ config: parsed.config, backoff: { initialMs: 100, maxMs: 1000 } });
  await agent.ready;
  client = ngrokRequestClient(agent.apiUrl!);
  ({ public_url: publicUrl } = await client.startTunnel({ name: "web", addr: upstream.port }));
});

afterAll(async () => {
  await agent?.stop();
  await upstream?.close();
  await edge?.dispose();
});

/** The inspector's live feed: server-sent events, parsed. */
async function openFeed(): Promise<{ next(match: (event: { event: string; data: any }) => boolean): Promise<{ event: string; data: any }>; close(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${agent.apiUrl}/api/requests/http/events`, { signal: controller.signal });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  return {
    async next(match) {
      for (;;) {
        let end: number;
        while ((end = text.indexOf("\n\n")) >= 0) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          if (!event) continue;
          const data = JSON.parse(
            block
              .split("\n")
              .filter((line) => line.startsWith("data: "))
              .map((line) => line.slice(6))
              .join("\n"),
          );
          if (match({ event, data })) return { event, data };
        }
        const { value, done } = await reader.read();
        if (done) throw new Error("the feed ended");
        text += decoder.decode(value, { stream: true });
      }
    },
    close: () => controller.abort(),
  };
}

const bodyOf = (raw: string) => Buffer.from(raw, "base64").toString("utf8").split("\r\n\r\n").slice(1).join("\r\n\r\n");

describe("a request through a tunnel", () => {
  it("is captured and shown, replays to the local service as a new capture, and delete empties list and page", async () => {
    const feed = await openFeed();
    try {
      await feed.next((event) => event.event === "snapshot");
      const payload = JSON.stringify({ item: "book", qty: 2 });
      const answer = await fetchPublic(edge.url, publicUrl, "/orders?src=e2e", {
        method: "POST",
        body: payload,
        headers: { "content-type": "application/json", "x-trace": "t-1" },
      });
      expect(answer.status).toBe(200);

      // the page's live feed
      const shown = await feed.next(
        (event) => event.event === "changes" && event.data.upsert.some((summary: any) => summary.uri === "/orders?src=e2e" && summary.state === "complete"),
      );
      const summary = shown.data.upsert.find((s: any) => s.uri === "/orders?src=e2e");
      expect(summary).toMatchObject({ method: "POST", status_code: 200, tunnel_name: "web", replay_of: null });

      // the API, through the published ngrok client
      const { requests } = await client.listRequests({ tunnel_name: "web" });
      expect(requests).toHaveLength(1);
      const [captured] = requests;
      expect(captured.id).toBe(summary.id);
      expect(captured).toMatchObject({
        tunnel_name: "web",
        remote_addr: "127.0.0.1",
        request: { method: "POST", uri: "/orders?src=e2e", headers: { "X-Trace": ["t-1"], "X-Forwarded-For": ["127.0.0.1"], Host: [new URL(publicUrl).host] } },
        response: { status_code: 200, status: "200 OK" },
      });
      expect(bodyOf(captured.request.raw)).toBe(payload);
      expect(bodyOf(captured.response!.raw)).toBe(answer.body.toString("utf8"));
      expect(await client.requestDetail(captured.id)).toEqual(captured);

      const seen = upstream.seen.length;
      expect(await client.replayRequest(captured.id)).toBe(true);
      expect(upstream.seen.length).toBe(seen + 1);
      expect(upstream.seen.at(-1)).toMatchObject({ method: "POST", url: "/orders?src=e2e", headers: { "x-trace": "t-1" } });
      const replayShown = await feed.next(
        (event) => event.event === "changes" && event.data.upsert.some((s: any) => s.replay_of === captured.id && s.state === "complete"),
      );
      const replay = replayShown.data.upsert.find((s: any) => s.replay_of === captured.id);
      expect(replay).toMatchObject({ method: "POST", uri: "/orders?src=e2e", status_code: 200 });
      const [newest] = (await client.listRequests({ limit: 1 })).requests;
      expect(newest.id).toBe(replay.id);
      expect(JSON.parse(bodyOf(newest.response!.raw))).toMatchObject({ bodySha256: sha256(Buffer.from(payload)) });

      expect(await client.deleteAllRequests()).toBe(true);
      expect((await client.listRequests()).requests).toEqual([]);
      await feed.next((event) => event.event === "changes" && event.data.clear === true);
    } finally {
      feed.close();
    }
  });

  it("is not captured when the tunnel has inspect: false", async () => {
    const { public_url } = await client.startTunnel({ name: "quiet", addr: upstream.port, inspect: false });
    expect((await fetchPublic(edge.url, public_url, "/private")).status).toBe(200);
    expect((await client.listRequests({ tunnel_name: "quiet" })).requests).toEqual([]);
    expect(await client.stopTunnel("quiet")).toBe(true);
  });

  it("keeps captured requests within inspect_db_size under a flood of large uploads, oldest evicted first", async () => {
    const body = patternBytes(512 * 1024);
    const before = process.memoryUsage();
    for (let round = 0; round < 4; round++) {
      const answers = await Promise.all(
        Array.from({ length: 5 }, (_, i) => fetchPublic(edge.url, publicUrl, `/echo/flood-${round}-${i}`, { method: "PUT", body })),
      );
      for (const answer of answers) expect(jsonOf(answer).bodySha256).toBe(sha256(body));
      expect(agent.capture!.bytes).toBeLessThanOrEqual(INSPECT_DB_SIZE);
    }
    const after = process.memoryUsage();
    const kept = (await client.listRequests({ limit: 1000 })).requests;
    console.log(
      `inspect e2e flood: 20 × 512 KiB uploads through the edge; store ${kept.length} exchanges, ${(agent.capture!.bytes / MiB).toFixed(2)} MiB accounted (bound ${INSPECT_DB_SIZE / MiB} MiB); ` +
        `heap ${(before.heapUsed / MiB).toFixed(1)} → ${(after.heapUsed / MiB).toFixed(1)} MiB`,
    );
    expect(kept.length).toBeGreaterThanOrEqual(2);
    expect(kept.length).toBeLessThan(20);
    // newest first; only the last rounds are left
    expect(kept.map((r) => r.id)).toEqual(
      kept
        .map((r) => r.id)
        .sort()
        .reverse(),
    );
    expect(kept.every((r) => r.request.uri.startsWith("/echo/flood-3-") || r.request.uri.startsWith("/echo/flood-2-"))).toBe(true);
  });
});
