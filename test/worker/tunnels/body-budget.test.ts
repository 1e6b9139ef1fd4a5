/**
 * The isolate's body budget on tunnels, through the Worker as it runs: anonymous uploads that stall while one
 * account's verify-webhook reads them fill that account's 4 MiB, its next webhook is answered 503 at the edge
 * while another account's is relayed, and once the uploads are aborted the first account's webhooks pass again.
 */

import { afterEach, describe, expect, it, vi } from "vitest";
import type { FrameOf } from "../../../src/relay/index.ts";
import { TEST_KEYS } from "../management/keys.ts";
import { connectAgent, type FakeAgent, publicFetch } from "./fake-agent.ts";

const SECRET = "tunnel-budget-secret";
/** Just under the 1 MiB a webhook read may take: four of them leave 4 KiB of an account's 4 MiB. */
const STALLED_BYTES = 1024 * 1024 - 1024;
/** A GitHub push event's size, more than those 4 KiB. */
const WEBHOOK = new TextEncoder().encode(JSON.stringify({ zen: "x".repeat(8 * 1024) }));

const agents: FakeAgent[] = [];
const heartbeats: Array<ReturnType<typeof setInterval>> = [];
const stalled: Array<ReadableStreamDefaultController<Uint8Array>> = [];

function abortStalled(): void {
  for (const controller of stalled.splice(0)) controller.error(new Error("the client went away"));
}

afterEach(() => {
  abortStalled();
  for (const timer of heartbeats.splice(0)) clearInterval(timer);
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

/** A tunnel of the account whose key is `key`, verifying GitHub webhooks, kept alive by a ping a second. */
async function webhookTunnel(key: string): Promise<{ agent: FakeAgent; url: string }> {
  const { agent } = await connectAgent(key);
  agents.push(agent);
  heartbeats.push(setInterval(() => agent.ping(), 1000));
  const tunnel = await agent.startOk({
    subdomain: `budget-${Math.random().toString(36).slice(2, 10)}`,
    traffic_policy: { on_http_request: [{ actions: [{ type: "verify-webhook", config: { provider: "github", secret: SECRET } }] }] },
  });
  return { agent, url: tunnel.public_url! };
}

async function signature(body: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(SECRET), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, body));
  return `sha256=${[...mac].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** The signed webhook, sent: its answer comes once the agent has answered it (or the edge refused it). */
async function signedWebhook(url: string): Promise<{ answer: Promise<Response> }> {
  const signed = await signature(WEBHOOK);
  return { answer: publicFetch(url, "/hook", { method: "POST", headers: { "x-hub-signature-256": signed }, body: WEBHOOK }) };
}

/** A forged webhook of the same size: its body is read (within the budget) and judged at the edge, never relayed. */
async function forgedStatus(url: string): Promise<number> {
  const response = await publicFetch(url, "/hook", { method: "POST", headers: { "x-hub-signature-256": `sha256=${"1".repeat(64)}` }, body: WEBHOOK });
  await response.body?.cancel();
  return response.status;
}

/** An anonymous upload that sends STALLED_BYTES and then nothing, until aborted. */
function stalledUpload(url: string): Promise<Response> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      stalled.push(controller);
      controller.enqueue(new Uint8Array(STALLED_BYTES));
    },
  });
  return publicFetch(url, "/hook", { method: "POST", headers: { "x-hub-signature-256": `sha256=${"0".repeat(64)}` }, body });
}

/** Answers the next request the agent gets with 204, after reading its body to the end; resolves to its length. */
async function answerNext(agent: FakeAgent): Promise<number> {
  const head = await agent.next("request_head");
  let length = 0;
  for (;;) {
    const frame = await agent.nextOf(["data", "end"], (candidate) => candidate.stream === head.stream);
    if (frame.type === "end") break;
    length += (frame as FrameOf<"data">).bytes.byteLength;
  }
  agent.send({ type: "response_head", stream: head.stream, status: 204, headers: [] });
  agent.send({ type: "end", stream: head.stream, count: 0 });
  return length;
}

describe("the body budget on tunnels", () => {
  it("answers an account 503 while stalled uploads hold its share, relays another account's, and relays it again once they are aborted", async () => {
    const filled = await webhookTunnel(TEST_KEYS.other.key);
    const spared = await webhookTunnel(TEST_KEYS.dev.key);
    const uploads = Array.from({ length: 4 }, () => stalledUpload(filled.url));

    // Forged webhooks are read and refused 403 at the edge while the account's share has room, 503 once it has not.
    await vi.waitFor(async () => expect(await forgedStatus(filled.url)).toBe(503), { timeout: 10_000, interval: 100 });
    const refused = await (await signedWebhook(filled.url)).answer;
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("2");
    expect(await refused.json()).toMatchObject({ error_code: "ERR_SVC_3204", status_code: 503, details: { retry_after: 2 } });

    const other = await signedWebhook(spared.url);
    expect(await answerNext(spared.agent)).toBe(WEBHOOK.byteLength);
    expect((await other.answer).status).toBe(204);

    abortStalled();
    await Promise.allSettled(uploads);
    await vi.waitFor(async () => expect(await forgedStatus(filled.url)).toBe(403), { timeout: 10_000, interval: 100 });
    const again = await signedWebhook(filled.url);
    expect(await answerNext(filled.agent)).toBe(WEBHOOK.byteLength);
    expect((await again.answer).status).toBe(204);
  });
});
