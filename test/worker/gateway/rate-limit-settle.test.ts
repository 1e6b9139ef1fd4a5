import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import type { Env } from "../../../src/env.ts";
import { handleGatewayRequest } from "../../../src/gateway/pipeline.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { newIsolate, send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("usageUpstreamPort")}`;

/** One route to the usage upstream under `policy` (the body of limit.yaml). */
function llmGateway(policy: string) {
  return singleEdge(`      - { id: r, match: /, upstream: "${upstream}", traffic_policy: limit.yaml }\n`, { "policies/limit.yaml": policy });
}

const tokens = (settle: string) => `
inbound:
  - actions:
      - type: rate-limit
        config:
          name: llm-tokens
          bucket_key: ["getReqHeader('x-api-key')"]
          cost: "int(getReqHeader('x-max-tokens')[0])"
          settle_cost: "${settle}"
          windows: [{ capacity: 1000, rate: 60s }]
`;

function completion(path: string, maxTokens: number) {
  return new Request(`http://gw.test${path}`, { headers: { "x-api-key": "k1", "x-max-tokens": String(maxTokens) } });
}

describe("rate-limit settle_cost through the Worker, against an upstream reporting usage", () => {
  it("reserves max_tokens, settles usage.total_tokens past capacity, and refuses the next request until the window drains", async () => {
    const routes = llmGateway(tokens("res.body.usage.total_tokens"));
    // Reserves 600; the completion used 1,100 (past the capacity of 1,000: the tokens were spent).
    const first = await send(routes, completion("/completion?total=1100&pad=20000", 600), {}, upstreamHandlers);
    expect(first.status).toBe(200);
    const body = (await first.json()) as { usage: { total_tokens: number }; choices: { text: string }[] };
    expect(body.usage.total_tokens).toBe(1100);
    expect(body.choices[0]!.text).toHaveLength(20_000);
    const second = await send(routes, completion("/completion?total=1", 1), {}, upstreamHandlers);
    expect(second.status).toBe(429);
    // Admitted within the last moments of a 60 s window: it drains in 60 s.
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThanOrEqual(59);
    expect(Number(second.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    await second.body?.cancel();
  });

  it("refunds an estimate the response did not spend", async () => {
    const routes = llmGateway(tokens("res.body.usage.total_tokens"));
    const first = await send(routes, completion("/completion?total=150", 900), {}, upstreamHandlers);
    await first.text();
    // 150 used, not 900: a reservation of 850 fits (1,000 in all).
    const second = await send(routes, completion("/completion?total=850", 850), {}, upstreamHandlers);
    expect(second.status).toBe(200);
    await second.text();
    const third = await send(routes, completion("/completion?total=1", 1), {}, upstreamHandlers);
    expect(third.status).toBe(429);
    await third.body?.cancel();
  });

  it("keeps the estimate for a body past 64 KiB, which reaches the client whole", async () => {
    const routes = llmGateway(tokens("res.body.usage.total_tokens"));
    const first = await send(routes, completion("/completion?total=10&pad=200000", 900), {}, upstreamHandlers);
    const body = (await first.json()) as { choices: { text: string }[] };
    expect(body.choices[0]!.text).toHaveLength(200_000);
    // Still 900 reserved: 100 fits, 101 would not.
    const over = await send(routes, completion("/completion?total=1", 101), {}, upstreamHandlers);
    expect(over.status).toBe(429);
    await over.body?.cancel();
    const fits = await send(routes, completion("/completion?total=1", 100), {}, upstreamHandlers);
    expect(fits.status).toBe(200);
    await fits.text();
  });

  it("settles from a response header, and keeps the estimate when the expression fails", async () => {
    const routes = llmGateway(tokens("int(res.headers['x-usage-tokens'][0])"));
    const first = await send(routes, completion("/header?total=50", 700), {}, upstreamHandlers);
    expect(await first.text()).toBe("ok");
    // The completion endpoint sends no x-usage-tokens: the expression fails, its 300 stay reserved.
    const second = await send(routes, completion("/completion?total=1", 300), {}, upstreamHandlers);
    await second.text();
    const third = await send(routes, completion("/completion?total=1", 651), {}, upstreamHandlers);
    expect(third.status).toBe(429);
    await third.body?.cancel();
    const fourth = await send(routes, completion("/header?total=650", 650), {}, upstreamHandlers);
    expect(fourth.status).toBe(200);
    await fourth.text();
  });

  it("never holds the response up: the client reads the first bytes while the upstream still holds the usage back", async () => {
    const routes = llmGateway(tokens("res.body.usage.total_tokens"));
    const ctx = createExecutionContext();
    const response = await handleGatewayRequest(completion("/held?total=40", 500), {
      env: env as Env,
      ctx,
      routes,
      handlers: upstreamHandlers,
      isolate: newIsolate(),
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('{"id":"cmpl-1",');
    await (await fetch(`${upstream}/release`)).text();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe('"usage":{"total_tokens":40}}');
    await waitOnExecutionContext(ctx);
    // 40 settled, not 500 reserved: 960 fit.
    const next = await send(routes, completion("/completion?total=1", 960), {}, upstreamHandlers);
    expect(next.status).toBe(200);
    await next.text();
  });

  it("a refund lifts the isolate's memory of a refusal: the next request asks the object, not the remembered wait", async () => {
    const routes = llmGateway(tokens("res.body.usage.total_tokens"));
    const isolate = newIsolate();
    const ctx = createExecutionContext();
    // 900 reserved while the upstream holds the usage back.
    const held = await handleGatewayRequest(completion("/held?total=100", 900), { env: env as Env, ctx, routes, handlers: upstreamHandlers, isolate });
    const reader = held.body!.getReader();
    await reader.read();
    // 500 more does not fit: refused, and this isolate remembers the bucket limited for about a minute.
    const refused = await send(routes, completion("/completion?total=1", 500), {}, upstreamHandlers, isolate);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(59);
    await refused.body?.cancel();
    await (await fetch(`${upstream}/release`)).text();
    while (!(await reader.read()).done);
    await waitOnExecutionContext(ctx);
    // 100 settled, not 900: 500 fit now, and the same isolate admits them.
    const next = await send(routes, completion("/completion?total=1", 500), {}, upstreamHandlers, isolate);
    expect(next.status).toBe(200);
    await next.text();
  });
});
