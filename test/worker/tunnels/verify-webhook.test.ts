/** verify-webhook in a tunnel's policy: the agent receives a signed body byte for byte, and never a forged one. */

import { afterEach, describe, expect, it } from "vitest";
import type { FrameOf } from "../../../src/relay/index.ts";
import { keptAliveTunnels, publicFetch, type FakeAgent } from "./fake-agent.ts";

const tunnels = keptAliveTunnels();
afterEach(() => tunnels.closeAll());

const SECRET = "tunnel-hook-secret";
/** Every byte value: any decoding on the way would show. */
const BINARY = Uint8Array.from({ length: 20_000 }, (_, i) => (i * 131 + 7) % 256);

async function githubSignature(body: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(SECRET), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, body));
  return `sha256=${[...mac].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** The body the agent receives on the stream of `head`, up to its end frame. */
async function bodyOf(agent: FakeAgent, head: FrameOf<"request_head">): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (;;) {
    const frame = await agent.nextOf(["data", "end"], (candidate) => candidate.stream === head.stream);
    if (frame.type === "end") break;
    parts.push((frame as FrameOf<"data">).bytes);
  }
  const whole = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    whole.set(part, offset);
    offset += part.byteLength;
  }
  return whole;
}

describe("verify-webhook on a tunnel", () => {
  it("refuses a forged webhook at the edge and relays a signed binary one whole", async () => {
    const { agent } = await tunnels.start();
    const tunnel = await agent.startOk({
      subdomain: `vw-${Math.random().toString(36).slice(2, 10)}`,
      traffic_policy: { on_http_request: [{ actions: [{ type: "verify-webhook", config: { provider: "github", secret: SECRET } }] }] },
    });

    const forged = await publicFetch(tunnel.public_url!, "/forged", {
      method: "POST",
      headers: { "x-hub-signature-256": `sha256=${"1".repeat(64)}` },
      body: BINARY,
    });
    expect(forged.status).toBe(403);
    expect(await forged.json()).toMatchObject({ error_code: "ERR_SVC_3204" });

    const pending = publicFetch(tunnel.public_url!, "/signed", {
      method: "POST",
      headers: { "x-hub-signature-256": await githubSignature(BINARY) },
      body: BINARY,
    });
    // The first request the agent sees is the signed one: the forged one never left the edge.
    const head = await agent.next("request_head");
    expect(head.target).toBe("/signed");
    expect(await bodyOf(agent, head)).toEqual(BINARY);
    agent.send({ type: "response_head", stream: head.stream, status: 204, headers: [] });
    agent.send({ type: "end", stream: head.stream, count: 0 });
    expect((await pending).status).toBe(204);
  });
});
