/**
 * `scope: global` against `scope: ingress` across ingress instances (two Cloudflare locations, `cf.colo`), and
 * bucket keys written in CEL, through the real pipeline and store objects.
 */

import { describe, expect, it } from "vitest";
import type { IsolateState } from "../../../src/gateway/pipeline.ts";
import { upstreamHandlers } from "../../../src/worker.ts";
import { newIsolate, send, singleEdge } from "./harness.ts";

const route = `      - { id: r, match: /, upstream: echo, traffic_policy: limit.yaml }\n`;

const limitPolicy = (capacity: number, extra: string) => `
inbound:
  - actions:
      - type: rate-limit
        config:
          name: per-client
          capacity: ${capacity}
          rate: 60s
${extra
  .split("\n")
  .filter(Boolean)
  .map((line) => `          ${line}`)
  .join("\n")}
`;

/** A request arriving at Cloudflare location `colo` (INGRESS_ID is empty in the tests: the location names the instance). */
function at(colo: string, path = "/", headers: Record<string, string> = {}): Request {
  const request = new Request(`http://gw.test${path}`, { headers: { "cf-connecting-ip": "198.51.100.7", ...headers } });
  return new Request(request, { cf: { colo } } as RequestInit);
}

async function statusOf(routes: ReturnType<typeof singleEdge>, request: Request, isolate?: IsolateState): Promise<number> {
  const response = await send(routes, request, {}, upstreamHandlers, isolate);
  await response.body?.cancel();
  return response.status;
}

async function statuses(routes: ReturnType<typeof singleEdge>, requests: readonly Request[]): Promise<number[]> {
  const out: number[] = [];
  for (const request of requests) out.push(await statusOf(routes, request));
  return out;
}

describe("rate-limit scope across ingress instances", () => {
  it("scope: global counts once across two locations: 3 admitted in all, then 429 at both", async () => {
    const routes = singleEdge(route, { "policies/limit.yaml": limitPolicy(3, "scope: global") });
    expect(await statuses(routes, [at("DFW"), at("AMS"), at("DFW"), at("AMS"), at("DFW")])).toEqual([200, 200, 200, 429, 429]);
  });

  it("scope: ingress (the default) counts per location: 2 admitted at each", async () => {
    for (const extra of ["scope: ingress", ""]) {
      const routes = singleEdge(route, { "policies/limit.yaml": limitPolicy(2, extra) });
      expect(await statuses(routes, [at("DFW"), at("DFW"), at("DFW")])).toEqual([200, 200, 429]);
      expect(await statuses(routes, [at("AMS"), at("AMS"), at("AMS")])).toEqual([200, 200, 429]);
    }
  });

  it("a busy global bucket served by one isolate per location, leases included, never admits past its capacity", async () => {
    const routes = singleEdge(route, { "policies/limit.yaml": limitPolicy(100, "scope: global") });
    const isolates = { DFW: newIsolate(), AMS: newIsolate() };
    const colos = Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? "DFW" : "AMS") as keyof typeof isolates);
    const answers = await Promise.all(colos.map((colo) => statusOf(routes, at(colo), isolates[colo])));
    const admitted = answers.filter((status) => status === 200).length;
    expect(admitted).toBeLessThanOrEqual(100);
    // What each isolate's last lease left unused stays counted (a lease is at most a tenth of the room).
    expect(admitted).toBeGreaterThanOrEqual(80);
    expect(answers.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    // A third location finds the one count: nothing left.
    expect(await statusOf(routes, at("SIN"))).toBe(429);
  });
});

describe("bucket keys written in CEL", () => {
  it("req.url.path names the bucket: /a is limited, /b counts on its own", async () => {
    const routes = singleEdge(route, { "policies/limit.yaml": limitPolicy(1, "bucket_key: [req.url.path]") });
    expect(await statuses(routes, [at("DFW", "/a"), at("DFW", "/a"), at("DFW", "/b")])).toEqual([200, 429, 200]);
  });

  it("conn.client_ip + req.host joins two values into one element", async () => {
    const routes = singleEdge(route, { "policies/limit.yaml": limitPolicy(1, "bucket_key: [conn.client_ip + req.host]") });
    const from = (ip: string) => new Request("http://gw.test/", { headers: { "cf-connecting-ip": ip } });
    expect(await statuses(routes, [from("198.51.100.8"), from("198.51.100.8"), from("198.51.100.9")])).toEqual([200, 429, 200]);
  });

  it("an element that fails counts the request in the bucket of failed keys, apart from '', and says why", async () => {
    const routes = singleEdge(route, {
      "policies/limit.yaml": `${limitPolicy(1, `bucket_key: ["getReqHeader('x-tenant')[0]"]\nenforce: false`)}
  - expressions: ["actions.svc.rate_limit.error.code != ''"]
    actions:
      - type: custom-response
        config:
          status_code: 299
          body: "\${actions.svc.rate_limit.error.code} \${actions.svc.rate_limit.limited}"
`,
    });
    const answer = async (headers: Record<string, string>) => {
      const response = await send(routes, at("DFW", "/", headers), {}, upstreamHandlers);
      if (response.status === 299) return `299 ${await response.text()}`;
      await response.body?.cancel();
      return String(response.status);
    };
    // No header: the element fails; the first request is counted, the second finds the failed keys' bucket full.
    expect(await answer({})).toBe("299 ERR_RATE_LIMIT_KEY false");
    expect(await answer({})).toBe("299 ERR_RATE_LIMIT_KEY true");
    // An empty tenant is a value: its own bucket, no error.
    expect(await answer({ "x-tenant": "" })).toBe("200");
    expect(await answer({ "x-tenant": "acme" })).toBe("200");
  });
});
