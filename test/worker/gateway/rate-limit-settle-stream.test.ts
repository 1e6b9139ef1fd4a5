import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it, vi } from "vitest";
import type { Env } from "../../../src/env.ts";
import { handleGatewayRequest } from "../../../src/gateway/pipeline.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { newIsolate, send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("usageUpstreamPort")}`;

/** A route to the usage upstream whose rate-limit reserves x-max-tokens and settles with `settle` (1,000 a minute). */
function llmGateway(settle: string) {
  const policy = `
inbound:
  - actions:
      - type: rate-limit
        config:
          name: llm-stream
          bucket_key: ["getReqHeader('x-api-key')"]
          cost: "int(getReqHeader('x-max-tokens')[0])"
          settle_cost: "${settle}"
          windows: [{ capacity: 1000, rate: 60s }]
`;
  return singleEdge(`      - { id: r, match: /, upstream: "${upstream}", traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": policy });
}

const committed: Record<string, string> = import.meta.glob("../../../policies/llm-tokens.yaml", { query: "?raw", import: "default", eager: true });
const LLM_TOKENS = Object.values(committed)[0]!;

const OPENAI = "res.body.usage.total_tokens";
const ANTHROPIC = "res.body.message.usage.input_tokens + res.body.usage.output_tokens";

function completion(path: string, maxTokens: number) {
  return new Request(`http://gw.test${path}`, { headers: { "x-api-key": "k1", "x-max-tokens": String(maxTokens) } });
}

/** Whether a request reserving `tokens` is admitted now (its body read, so its own settle is done). */
async function admits(routes: ReturnType<typeof llmGateway>, tokens: number): Promise<boolean> {
  const response = await send(routes, completion("/header?total=0", tokens), {}, upstreamHandlers);
  await response.text();
  return response.status === 200;
}

describe("settle_cost from a streamed response (text/event-stream), through the Worker", () => {
  it("settles OpenAI's last usage chunk: 600 reserved, 950 used, so 50 fit and 51 do not", async () => {
    const routes = llmGateway(OPENAI);
    const response = await send(routes, completion("/sse?total=950&pad=40", 600), {}, upstreamHandlers);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const text = await response.text();
    // The client got every event, [DONE] included.
    expect(text.match(/^data: /gm)).toHaveLength(42);
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(await admits(routes, 51)).toBe(false);
    // A probe reserves its cost and keeps it (its text/plain answer has no res.body): 50 is the last to fit.
    expect(await admits(routes, 50)).toBe(true);
  });

  it("settles Anthropic's merged events: message_start's input tokens plus message_delta's output tokens", async () => {
    const routes = llmGateway(ANTHROPIC);
    const response = await send(routes, completion("/sse?total=100&pad=5&style=anthropic", 900), {}, upstreamHandlers);
    expect(await response.text()).toContain("event: message_stop");
    // 100 settled, not 900 reserved: 900 more fit.
    expect(await admits(routes, 900)).toBe(true);
  });

  it("never holds the stream up: the client reads the first event while the upstream still holds the usage back", async () => {
    const routes = llmGateway(OPENAI);
    const ctx = createExecutionContext();
    const response = await handleGatewayRequest(completion("/sse-held?total=40", 500), {
      env: env as Env,
      ctx,
      routes,
      handlers: upstreamHandlers,
      isolate: newIsolate(),
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"content":"Hello"');
    await (await fetch(`${upstream}/release`)).text();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toContain('"total_tokens":40');
    await waitOnExecutionContext(ctx);
    expect(await admits(routes, 960)).toBe(true);
  });

  it("settles what the stream reports when the client leaves mid-stream and the stream still ends", async () => {
    const routes = llmGateway(OPENAI);
    const ctx = createExecutionContext();
    const response = await handleGatewayRequest(completion("/sse-held?total=30", 700), {
      env: env as Env,
      ctx,
      routes,
      handlers: upstreamHandlers,
      isolate: newIsolate(),
    });
    const reader = response.body!.getReader();
    await reader.read();
    // The client goes away before the usage is sent.
    await reader.cancel();
    await (await fetch(`${upstream}/release`)).text();
    await waitOnExecutionContext(ctx);
    // 30 settled, not 700: 970 fit.
    expect(await admits(routes, 970)).toBe(true);
  });

  it("keeps the estimate for an endless stream the client leaves, and closes the upstream at the byte bound", async () => {
    const routes = llmGateway(OPENAI);
    const closedBefore = Number(await (await fetch(`${upstream}/sse-endless-closed`)).text());
    const ctx = createExecutionContext();
    const response = await handleGatewayRequest(completion("/sse-endless", 800), {
      env: env as Env,
      ctx,
      routes,
      handlers: upstreamHandlers,
      isolate: newIsolate(),
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("data: ");
    await reader.cancel();
    await waitOnExecutionContext(ctx);
    // The settle's branch stopped past its bound, so nothing reads the upstream any more: its connection closes.
    await vi.waitFor(async () => expect(Number(await (await fetch(`${upstream}/sse-endless-closed`)).text())).toBe(closedBefore + 1), {
      timeout: 20_000,
    });
    // Still 800 reserved: 200 fit, 201 do not.
    expect(await admits(routes, 201)).toBe(false);
    expect(await admits(routes, 200)).toBe(true);
  });

  it("keeps the estimate past a 10 MB event, which the client still receives whole", async () => {
    const routes = llmGateway(OPENAI);
    const response = await send(routes, completion("/sse-big", 900), {}, upstreamHandlers);
    const text = await response.text();
    expect(text.length).toBeGreaterThan(10 * 1024 * 1024);
    expect(text.endsWith('data: {"usage":{"total_tokens":1}}\n\n')).toBe(true);
    expect(await admits(routes, 101)).toBe(false);
    expect(await admits(routes, 100)).toBe(true);
  });

  it("keeps the estimate for garbage, which the client receives byte for byte", async () => {
    const routes = llmGateway(OPENAI);
    const response = await send(routes, completion("/sse-garbage", 900), {}, upstreamHandlers);
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(bytes.byteLength).toBe(65_536);
    expect(bytes[1]).toBe((7919 + 13) % 256);
    expect(await admits(routes, 101)).toBe(false);
    expect(await admits(routes, 100)).toBe(true);
  });

  it("the committed policies/llm-tokens.yaml settles OpenAI's and Anthropic's streams with one expression", async () => {
    const routes = singleEdge(`      - { id: r, match: /, upstream: "${upstream}", traffic_policy: llm-tokens.yaml }\n`, {
      "policies/llm-tokens.yaml": LLM_TOKENS,
    });
    const request = (path: string, maxTokens: number) =>
      new Request(`http://gw.test${path}`, { headers: { "x-api-key": "k2", "x-max-tokens": String(maxTokens) } });
    // 900 reserved, 120 settled (OpenAI's usage chunk); then 800 reserved, 60 settled (10 in + 50 out, Anthropic's).
    await (await send(routes, request("/sse?total=120&pad=8", 900), {}, upstreamHandlers)).text();
    await (await send(routes, request("/sse?total=60&pad=8&style=anthropic", 800), {}, upstreamHandlers)).text();
    // 180 of 1,000 spent: 820 fit, and its estimate stays (its echo-less answer has no usage): nothing more fits.
    const fits = await send(routes, request("/header?total=0", 820), {}, upstreamHandlers);
    expect(fits.status).toBe(200);
    expect(fits.headers.get("ratelimit")).toContain("r=0");
    await fits.text();
    const refused = await send(routes, request("/header?total=0", 1), {}, upstreamHandlers);
    expect(refused.status).toBe(429);
    await refused.body?.cancel();
  });
});
