/** The Worker's way of loading policies: gateway.yaml checked at load, each route's policy compiled when first asked. */

import { describe, expect, it } from "vitest";
import { loadGatewayConfig, type GatewayConfig, type GatewayLoadOptions, type Route } from "../../../src/gateway/gateway-config.ts";
import { formatIssue, type PolicyIssue } from "../../../src/policy/issues.ts";
import { lines } from "../support/policy-text.ts";

const GATEWAY = "policies/gateway.yaml";
const gateway = lines(
  "edges:",
  "  - id: e1",
  "    hostnames: [a.test]",
  "    routes:",
  "      - { id: good, match: /good, upstream: echo, traffic_policy: good.yaml }",
  "      - { id: also, match: /also, upstream: echo, traffic_policy: good.yaml }",
  "      - { id: broken, match: /broken, upstream: echo, traffic_policy: broken.yaml }",
  "      - id: inline",
  "        match: /inline",
  "        upstream: echo",
  "        traffic_policy:",
  "          inbound:",
  '            - expressions: ["req.nope"]',
  "              actions: [{ type: deny }]",
  "      - { id: none, match: /none, upstream: echo }",
);
const FILES = {
  "policies/good.yaml": lines("inbound:", "  - actions: [{ type: deny }]"),
  "policies/broken.yaml": lines("inbound:", "  - actions: [{ type: rate-limit, config: { capacity: 10, rate: 65s } }]"),
  "policies/unused.yaml": lines("inbound: 7"),
  [GATEWAY]: gateway,
};

function load(files: Record<string, string>, options: GatewayLoadOptions = {}): GatewayConfig {
  const result = loadGatewayConfig(files, options);
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join("\n"));
  return result.config;
}

const route = (config: GatewayConfig, id: string): Route => config.edges[0]!.routes.find((candidate) => candidate.id === id)!;

describe("policies compiled on first use", () => {
  it("a gateway whose policy files are broken loads; each route answers its own policy when asked", () => {
    const heard: PolicyIssue[][] = [];
    const config = load(FILES, { policies: "on-first-use", onPolicyIssues: (issues) => heard.push([...issues]) });
    expect(heard).toEqual([]);
    expect(route(config, "good").policy()).toMatchObject({ ok: true, policy: { inbound: [{ actions: [{ type: "deny" }] }] } });
    expect(route(config, "none").policy()).toMatchObject({ ok: true, policy: { inbound: [], outbound: [] } });
    const broken = route(config, "broken").policy();
    expect(broken.ok ? [] : broken.issues.map(formatIssue)).toEqual(["policies/broken.yaml:2: inbound[0].actions[0].config.rate: must be a multiple of 10s"]);
    const inline = route(config, "inline").policy();
    expect(inline.ok ? [] : inline.issues.map(formatIssue)).toEqual([
      "policies/gateway.yaml:13: edges[0].routes[3].traffic_policy.inbound[0].expressions[0]: invalid CEL: unknown field 'nope' of req",
    ]);
    // Each failing policy is heard of once, whatever how often its route asks; the unused file never compiles.
    route(config, "broken").policy();
    expect(heard.map((issues) => issues.map(formatIssue))).toEqual([
      ["policies/broken.yaml:2: inbound[0].actions[0].config.rate: must be a multiple of 10s"],
      ["policies/gateway.yaml:13: edges[0].routes[3].traffic_policy.inbound[0].expressions[0]: invalid CEL: unknown field 'nope' of req"],
    ]);
  });

  it("routes naming the same file share one compiled policy, compiled once", () => {
    const config = load(FILES, { policies: "on-first-use" });
    const good = route(config, "good").policy();
    const also = route(config, "also").policy();
    expect(good.ok && also.ok && good.policy === also.policy).toBe(true);
    expect(route(config, "good").policy()).toBe(good);
  });

  it("gateway.yaml itself is still checked at load", () => {
    const result = loadGatewayConfig({ ...FILES, [GATEWAY]: gateway.replace("/also", "/good") }, { policies: "on-first-use" });
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([
      "policies/gateway.yaml:6: edges[0].routes[1].match: another route of edge 'e1' already matches '/good'",
    ]);
  });

  it("at load (policy:check, the build) every file is compiled and every issue reported, in file order", () => {
    const result = loadGatewayConfig(FILES);
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([
      "policies/broken.yaml:2: inbound[0].actions[0].config.rate: must be a multiple of 10s",
      "policies/unused.yaml:1: inbound: must be a list of entries, got number 7",
      "policies/gateway.yaml:13: edges[0].routes[3].traffic_policy.inbound[0].expressions[0]: invalid CEL: unknown field 'nope' of req",
    ]);
  });
});
