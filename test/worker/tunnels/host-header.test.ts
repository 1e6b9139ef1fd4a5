/** The Host a tunnel's local service sees: the one the client asked for, or the one the tunnel's policy set. */

import { afterEach, describe, expect, it } from "vitest";
import type { FrameOf } from "../../../src/relay/index.ts";
import { keptAliveTunnels, publicFetch, type FakeAgent } from "./fake-agent.ts";

const tunnels = keptAliveTunnels();
afterEach(() => tunnels.closeAll());

const subdomain = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;

/** Answers the next request the agent receives with 204, and returns its head's Host. */
async function hostSeen(agent: FakeAgent): Promise<string | undefined> {
  const head: FrameOf<"request_head"> = await agent.next("request_head");
  agent.send({ type: "response_head", stream: head.stream, status: 204, headers: [] });
  agent.send({ type: "end", stream: head.stream, count: 0 });
  return head.headers.find(([name]) => name === "host")?.[1];
}

describe("Host on a tunnel", () => {
  it("is the public host the client asked for when the policy leaves it", async () => {
    const { agent } = await tunnels.start();
    const tunnel = await agent.startOk({ subdomain: subdomain("host-kept") });
    const answer = publicFetch(tunnel.public_url!, "/");
    expect(await hostSeen(agent)).toBe(new URL(tunnel.public_url!).host);
    expect((await answer).status).toBe(204);
  });

  it("is the one the tunnel's policy set, as ngrok's add-headers host: localhost example does", async () => {
    const { agent } = await tunnels.start();
    const tunnel = await agent.startOk({
      subdomain: subdomain("host-set"),
      traffic_policy: { on_http_request: [{ actions: [{ type: "add-headers", config: { headers: { host: "localhost" } } }] }] },
    });
    const answer = publicFetch(tunnel.public_url!, "/");
    expect(await hostSeen(agent)).toBe("localhost");
    expect((await answer).status).toBe(204);
  });
});
