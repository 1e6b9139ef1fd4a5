/**
 * The circuit-breaker action of a route's traffic policy, through the Worker's pipeline to a real local upstream
 * that fails on command; its isolate memory and breaker objects run on a clock the test moves.
 */

import { describe, expect, inject, it } from "vitest";
import { newIsolate, send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;

let upstreams = 0;
async function flakyUpstream() {
  const name = `a${upstreams++}${Math.random().toString(36).slice(2, 7)}`;
  const control = async (command: "fail" | "recover" | "hits") =>
    ((await (await fetch(`${upstream}/control/${name}/${command}`)).json()) as { hits: number }).hits;
  return { path: `/flaky/${name}`, control };
}

/** A fresh edge per call (circuits live in Durable Objects that outlast a test), its route under `policy`. */
function routeWith(policy: string) {
  return singleEdge(`      - { id: r, match: /, upstream: ${upstream}, traffic_policy: breaker.yaml }\n`, { "policies/breaker.yaml": policy });
}

const breakerPolicy = (config: string, ...more: string[]) =>
  ["on_http_request:", "  - actions:", "      - type: circuit-breaker", `        config: ${config}`, ...more, ""].join("\n");

function isolateOnClock() {
  const clock = { now: 1_700_000_000_000 };
  return { clock, isolate: newIsolate(() => clock.now) };
}

async function statusOf(response: Response): Promise<number> {
  await response.body?.cancel();
  return response.status;
}

describe("circuit-breaker action on a route", () => {
  it("trips on the upstream's 500s, refuses without calling it, and recovers through one probe", async () => {
    const routes = routeWith(breakerPolicy("{ error_threshold: 0.5, volume_threshold: 4, tripped_duration: 1s }"));
    const { path, control } = await flakyUpstream();
    const { clock, isolate } = isolateOnClock();
    const get = async () => statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, undefined, isolate));
    await control("fail");
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await get());
    expect(first).toEqual([500, 500, 500, 500]);

    const refused = await send(routes, new Request(`http://gw.test${path}`), {}, undefined, isolate);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("x-tollgate-circuit")).toBe("open");
    expect(await refused.json()).toMatchObject({ error_code: "ERR_SVC_303", status_code: 503, details: { circuit: "open", retry_after: 1 } });
    expect(await control("hits")).toBe(4);

    await control("recover");
    clock.now += 999;
    expect(await get()).toBe(503);
    clock.now += 1;
    const together = await Promise.all(Array.from({ length: 6 }, () => get()));
    expect(together.filter((status) => status === 200)).toHaveLength(1);
    expect(together.filter((status) => status === 503)).toHaveLength(5);
    expect(await get()).toBe(200);
    expect(await control("hits")).toBe(6);
  });

  it("another isolate learns from the circuit's object that it is open", async () => {
    const routes = routeWith(breakerPolicy("{ volume_threshold: 2 }"));
    const { path, control } = await flakyUpstream();
    const { clock, isolate } = isolateOnClock();
    await control("fail");
    for (let i = 0; i < 2; i++) await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, undefined, isolate));
    const other = newIsolate(() => clock.now);
    expect(await statusOf(await send(routes, new Request(`http://gw.test${path}`), {}, undefined, other))).toBe(503);
    expect(await control("hits")).toBe(2);
  });

  it("with enforce: false only records: every request reaches the upstream, and the variables say when it would have tripped", async () => {
    const routes = routeWith(
      breakerPolicy(
        "{ volume_threshold: 3, enforce: false }",
        "on_http_response:",
        "  - actions:",
        "      - type: add-headers",
        '        config: { headers: { x-circuit: "${actions.svc.circuit_breaker.tripped} ${actions.svc.circuit_breaker.state}" } }',
      ),
    );
    const { path, control } = await flakyUpstream();
    const { isolate } = isolateOnClock();
    await control("fail");
    const seen = [];
    for (let i = 0; i < 6; i++) {
      const response = await send(routes, new Request(`http://gw.test${path}`), {}, undefined, isolate);
      seen.push(`${await statusOf(response)} ${response.headers.get("x-circuit")}`);
    }
    expect(seen).toEqual(["500 false closed", "500 false closed", "500 false closed", "500 true open", "500 true open", "500 true open"]);
    expect(await control("hits")).toBe(6);
  });

  it("two routes under one policy keep circuits of their own", async () => {
    const routes = singleEdge(
      `      - { id: a, match: /a/, upstream: ${upstream}, traffic_policy: breaker.yaml }\n      - { id: b, match: /b/, upstream: ${upstream}, traffic_policy: breaker.yaml }\n`,
      { "policies/breaker.yaml": breakerPolicy("{ volume_threshold: 2 }") },
    );
    const { path, control } = await flakyUpstream();
    const { isolate } = isolateOnClock();
    await control("fail");
    for (let i = 0; i < 2; i++) await statusOf(await send(routes, new Request(`http://gw.test/a${path}`), {}, undefined, isolate));
    expect(await statusOf(await send(routes, new Request(`http://gw.test/a${path}`), {}, undefined, isolate))).toBe(503);
    expect(await statusOf(await send(routes, new Request(`http://gw.test/b${path}`), {}, undefined, isolate))).toBe(500);
  });
});
