/** Policies as the Worker loads them (compiled on a route's first request), and failing expressions on the gateway path. */

import { afterEach, describe, expect, it, vi } from "vitest";
import { gatewayFrom, newIsolate, send } from "./harness.ts";

const T0 = 1_700_000_000_000;

const gateway = (routes: string) => `edges:\n  - id: EDGE\n    hostnames: ["gw.test"]\n    routes:\n${routes}`;

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a route whose policy does not compile", () => {
  it("answers 500 with the located message while the other routes serve", async () => {
    const routes = gatewayFrom(
      {
        "policies/gateway.yaml": gateway(
          "      - { id: broken, match: /broken, upstream: echo, traffic_policy: broken.yaml }\n      - { id: fine, match: /, upstream: echo }\n",
        ),
        "policies/broken.yaml": "inbound:\n  - actions: [{ type: rate-limit, config: { capacity: 10, rate: 65s } }]\n",
      },
      { policies: "on-first-use" },
    );
    const fine = await send(routes, new Request("http://gw.test/fine"));
    expect(fine.status).toBe(200);
    await fine.body?.cancel();
    const broken = await send(routes, new Request("http://gw.test/broken"));
    expect(broken.status).toBe(500);
    const body = (await broken.json()) as { msg: string; details: { issues: string[] } };
    expect(body.msg).toMatch(
      /^The policy of route '[^/]+\/broken' does not load: policies\/broken\.yaml:2: inbound\[0\]\.actions\[0\]\.config\.rate: must be a multiple of 10s$/,
    );
    expect(body.details.issues).toEqual(["policies/broken.yaml:2: inbound[0].actions[0].config.rate: must be a multiple of 10s"]);
  });
});

describe("an expression that fails on absent data, on the gateway path", () => {
  it("writes at most one line a second, with the count of the failures it did not log", async () => {
    let now = T0;
    const isolate = newIsolate(() => now);
    const routes = gatewayFrom(
      {
        "policies/gateway.yaml": gateway("      - { id: r, match: /, upstream: echo, traffic_policy: tier.yaml }\n"),
        "policies/tier.yaml": "inbound:\n  - name: gold\n    expressions: [\"req.headers['x-tier'][0] == 'gold'\"]\n    actions: [{ type: deny }]\n",
      },
      { policies: "on-first-use" },
    );
    const warnings = vi.spyOn(console, "warn").mockImplementation(() => {});
    const lines = () => warnings.mock.calls.map((call) => String(call[0])).filter((line) => line.startsWith("traffic policy: expression"));
    const perSecond: number[] = [];
    for (let second = 0; second < 3; second++) {
      const before = lines().length;
      for (let i = 0; i < 20; i++) {
        const response = await send(routes, new Request("http://gw.test/"), {}, undefined, isolate);
        expect(response.status).toBe(200);
        await response.body?.cancel();
        now += 10;
      }
      perSecond.push(lines().length - before);
      now += 1000;
    }
    expect(perSecond).toEqual([1, 1, 1]);
    expect(lines()[2]).toMatch(/of entry "gold" failed \(field not found: x-tier\); the entry is skipped \(and 19 more times since its last line\)$/);
  });
});
