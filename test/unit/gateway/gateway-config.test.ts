/** policies/gateway.yaml: validation with exact messages, the route table, and the committed policies/ directory. */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadGatewayConfig, type GatewayConfig } from "../../../src/gateway/gateway-config.ts";
import { buildRouteTable } from "../../../src/gateway/route-table.ts";
import { formatIssue } from "../../../src/policy/issues.ts";

const GATEWAY = "policies/gateway.yaml";
const lines = (...text: string[]) => `${text.join("\n")}\n`;
const POLICIES = { "policies/api.yaml": lines("inbound:", "  - actions:", "      - type: deny") };

function problems(gateway: string, policies: Record<string, string> = POLICIES): string[] {
  const result = loadGatewayConfig({ ...policies, [GATEWAY]: gateway });
  return result.ok ? [] : result.issues.map(formatIssue);
}

function config(gateway: string, policies: Record<string, string> = POLICIES): GatewayConfig {
  const result = loadGatewayConfig({ ...policies, [GATEWAY]: gateway });
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join("\n"));
  return result.config;
}

/** One edge `e1` serving a.test with one route; `route` lines replace the route (they start on line 5). */
function oneRoute(...route: string[]): string {
  return lines("edges:", "  - id: e1", "    hostnames: [a.test]", "    routes:", ...route.map((line, i) => `${i === 0 ? "      - " : "        "}${line}`));
}

describe("gateway.yaml validation", () => {
  it("a minimal gateway loads", () => {
    expect(problems(oneRoute("id: r1", "match: /", "upstream: echo"))).toEqual([]);
  });

  it("a duplicate edge id is refused at the second one", () => {
    const text = lines(
      "edges:",
      "  - id: e1",
      "    hostnames: [a.test]",
      "    routes: [{ id: r1, match: /, upstream: echo }]",
      "  - id: e1",
      "    hostnames: [b.test]",
      "    routes: [{ id: r1, match: /, upstream: echo }]",
    );
    expect(problems(text)).toEqual([`${GATEWAY}:5: edges[1].id: duplicate edge id 'e1'`]);
  });

  it("a duplicate route id in one edge is refused", () => {
    const text = lines(
      "edges:",
      "  - id: e1",
      "    hostnames: [a.test]",
      "    routes:",
      "      - { id: r1, match: /a, upstream: echo }",
      "      - { id: r1, match: /b, upstream: echo }",
    );
    expect(problems(text)).toEqual([`${GATEWAY}:6: edges[0].routes[1].id: duplicate route id 'r1' in edge 'e1'`]);
  });

  it("two routes of one edge with the same prefix are refused, also when one has a trailing slash", () => {
    const text = lines(
      "edges:",
      "  - id: e1",
      "    hostnames: [a.test]",
      "    routes:",
      "      - { id: r1, match: /api, upstream: echo }",
      "      - { id: r2, match: /api/, upstream: echo }",
    );
    expect(problems(text)).toEqual([`${GATEWAY}:6: edges[0].routes[1].match: another route of edge 'e1' already matches '/api'`]);
  });

  it("a host name served by two edges is refused", () => {
    const text = lines(
      "edges:",
      "  - id: e1",
      "    hostnames: [a.test]",
      "    routes: [{ id: r1, match: /, upstream: echo }]",
      "  - id: e2",
      "    hostnames:",
      "      - b.test",
      "      - a.test",
      "    routes: [{ id: r1, match: /, upstream: echo }]",
    );
    expect(problems(text)).toEqual([`${GATEWAY}:8: edges[1].hostnames[1]: host name 'a.test' is already served by edge 'e1'`]);
  });

  it.each([["api.tunnels.test"], ["a.b.tunnels.test"], ["'*.tunnels.test'"]])("host name %s under the tunnel domain is refused, located", (hostname) => {
    const text = lines("edges:", "  - id: e1", "    hostnames:", "      - a.test", `      - ${hostname}`, "    routes: [{ id: r1, match: /, upstream: echo }]");
    const result = loadGatewayConfig({ ...POLICIES, [GATEWAY]: text }, { tunnelDomain: "tunnels.test" });
    const name = hostname.replace(/'/g, "");
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([
      `${GATEWAY}:5: edges[0].hostnames[1]: host name '${name}' is under the tunnel domain 'tunnels.test' (TUNNEL_DOMAIN), where every host is a tunnel's: use a host name outside it, or another TUNNEL_DOMAIN`,
    ]);
  });

  it("the tunnel domain itself, hosts beside it and the catch-all '*' are not under it", () => {
    const text = lines(
      "edges:",
      "  - id: e1",
      "    hostnames: [tunnels.test, othertunnels.test, '*', '*.test']",
      "    routes: [{ id: r1, match: /, upstream: echo }]",
    );
    expect(loadGatewayConfig({ ...POLICIES, [GATEWAY]: text }, { tunnelDomain: "tunnels.test" }).ok).toBe(true);
  });

  it.each([["A.test"], ["a.test:8080"], ["foo.*.test"], ["a_b.test"], ["-a.test"], ['""'], ["https://a.test"]])("host name %s is refused", (hostname) => {
    const text = lines("edges:", "  - id: e1", "    hostnames:", `      - ${hostname}`, "    routes: [{ id: r1, match: /, upstream: echo }]");
    expect(problems(text)).toEqual([`${GATEWAY}:4: edges[0].hostnames[0]: must be a lower-case host name without port, '*.<domain>' or '*'`]);
  });

  it("host names that are not a list are refused", () => {
    const text = lines("edges:", "  - id: e1", "    hostnames: a.test", "    routes: [{ id: r1, match: /, upstream: echo }]");
    expect(problems(text)).toEqual([`${GATEWAY}:3: edges[0].hostnames: must be a list of host names, got string "a.test"`]);
  });

  it("an edge without host names is refused", () => {
    const text = lines("edges:", "  - id: e1", "    hostnames: []", "    routes: [{ id: r1, match: /, upstream: echo }]");
    expect(problems(text)).toEqual([`${GATEWAY}:3: edges[0].hostnames: must have at least 1 host name`]);
  });

  it("an id with other characters than letters, digits, '_' and '-' is refused", () => {
    expect(problems(oneRoute("id: r/1", "match: /", "upstream: echo"))).toEqual([
      `${GATEWAY}:5: edges[0].routes[0].id: must be 1 to 64 letters, digits, '_' or '-'`,
    ]);
  });

  it("a match that is not a path prefix is refused", () => {
    expect(problems(oneRoute("id: r1", "match: api", "upstream: echo"))).toEqual([
      `${GATEWAY}:6: edges[0].routes[0].match: must be a path prefix starting with '/'`,
    ]);
  });

  it.each([
    ["ftp://files.test", "must be 'management', 'echo', an http(s):// origin URL or tcp://host:port (got 'ftp://files.test')"],
    ["origin", "must be 'management', 'echo', an http(s):// origin URL or tcp://host:port (got 'origin')"],
    ["https://origin.test/?a=1", "origin URL must not have a query or fragment"],
    ["https://origin.test/#top", "origin URL must not have a query or fragment"],
    ["tcp://db.test", "TCP upstream must be tcp://host:port (got 'tcp://db.test')"],
    ["tcp://db.test:5432/x", "TCP upstream must be tcp://host:port (got 'tcp://db.test:5432/x')"],
  ])("upstream %s is refused: %s", (upstream, message) => {
    expect(problems(oneRoute("id: r1", "match: /", `upstream: "${upstream}"`))).toEqual([`${GATEWAY}:7: edges[0].routes[0].upstream: ${message}`]);
  });

  it("an upstream that is not a string is refused", () => {
    expect(problems(oneRoute("id: r1", "match: /", "upstream: 8080"))).toEqual([
      `${GATEWAY}:7: edges[0].routes[0].upstream: must be a string, got number 8080`,
    ]);
  });

  it.each([["management"], ["echo"], ["https://origin.test"], ["http://127.0.0.1:9000/base"], ["tcp://db.test:5432"]])("upstream %s loads", (upstream) => {
    expect(problems(oneRoute("id: r1", "match: /", `upstream: "${upstream}"`))).toEqual([]);
  });

  it("a route naming a policy file that does not exist is refused with the files there are", () => {
    expect(problems(oneRoute("id: r1", "match: /", "upstream: echo", "traffic_policy: nope.yaml"))).toEqual([
      `${GATEWAY}:8: edges[0].routes[0].traffic_policy: no policy file 'policies/nope.yaml' (policy files: policies/api.yaml)`,
    ]);
  });

  it("gateway.yaml itself is not a policy file", () => {
    expect(problems(oneRoute("id: r1", "match: /", "upstream: echo", "traffic_policy: gateway.yaml"))).toEqual([
      `${GATEWAY}:8: edges[0].routes[0].traffic_policy: no policy file 'policies/gateway.yaml' (policy files: policies/api.yaml)`,
    ]);
  });

  it.each([["api.yaml"], ["policies/api.yaml"], ["./api.yaml"]])("a policy file may be named %s", (reference) => {
    expect(problems(oneRoute("id: r1", "match: /", "upstream: echo", `traffic_policy: ${reference}`))).toEqual([]);
  });

  it("a traffic_policy that is neither a file name nor a map is refused", () => {
    expect(problems(oneRoute("id: r1", "match: /", "upstream: echo", "traffic_policy: [api.yaml]"))).toEqual([
      `${GATEWAY}:8: edges[0].routes[0].traffic_policy: must be a file name under policies/ or an inline policy map`,
    ]);
  });

  it("an inline policy's problems carry their path under the route and their line in gateway.yaml", () => {
    const text = oneRoute(
      "id: r1",
      "match: /",
      "upstream: echo",
      "traffic_policy:",
      "  inbound:",
      "    - actions:",
      "        - type: rate-limit",
      "          config:",
      "            capacity: 10",
      "            rate: 61s",
    );
    expect(problems(text)).toEqual([`${GATEWAY}:14: edges[0].routes[0].traffic_policy.inbound[0].actions[0].config.rate: must be a multiple of 10s`]);
  });

  it("an inline policy's unknown keys and bad CEL are found too", () => {
    const text = oneRoute(
      "id: r1",
      "match: /",
      "upstream: echo",
      "traffic_policy:",
      "  inbound:",
      "    - expressions: ['res.status_code == 500']",
      "      actions: [{ type: deny }]",
    );
    expect(problems(text)).toEqual([
      `${GATEWAY}:10: edges[0].routes[0].traffic_policy.inbound[0].expressions[0]: invalid CEL: res is only available in outbound expressions`,
    ]);
    const unknown = oneRoute("id: r1", "match: /", "upstream: echo", "traffic_policy:", "  inbund: []");
    expect(problems(unknown)).toEqual([`${GATEWAY}:9: edges[0].routes[0].traffic_policy.inbund: unknown key`]);
  });

  it("a policy file with problems is reported with its own file and line", () => {
    const policies = { "policies/broken.yaml": lines("inbound:", "  - actions:", "      - type: deny", "        config: { status_code: 302 }") };
    expect(problems(oneRoute("id: r1", "match: /", "upstream: echo", "traffic_policy: broken.yaml"), policies)).toEqual([
      "policies/broken.yaml:4: inbound[0].actions[0].config.status_code: must be at least 400",
    ]);
  });

  it("unknown keys and missing fields of edges and routes are refused", () => {
    const text = lines("edges:", "  - id: e1", "    hostnames: [a.test]", "    tls: true", "    routes:", "      - id: r1", "        upstream: echo");
    expect(problems(text)).toEqual([`${GATEWAY}:4: edges[0].tls: unknown key`, `${GATEWAY}:6: edges[0].routes[0].match: is required`]);
  });

  it("a gateway without edges is refused", () => {
    expect(problems(lines("edges: []"))).toEqual([`${GATEWAY}:1: edges: must have at least 1 edge`]);
  });

  it("a YAML syntax error names its line", () => {
    expect(problems(lines("edges:", "  - id: e1", "    hostnames: [a.test"))).toEqual([
      `${GATEWAY}:4: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`,
    ]);
  });

  it("a missing gateway.yaml is reported", () => {
    const result = loadGatewayConfig(POLICIES);
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([`${GATEWAY}: file is missing`]);
  });

  it("every problem is reported at once", () => {
    const text = lines(
      "edges:",
      "  - id: e1",
      "    hostnames: [a.test]",
      "    routes:",
      "      - { id: r1, match: /, upstream: nowhere }",
      "      - { id: r2, match: /x, upstream: echo, traffic_policy: missing.yaml }",
    );
    expect(problems(text)).toEqual([
      `${GATEWAY}:5: edges[0].routes[0].upstream: must be 'management', 'echo', an http(s):// origin URL or tcp://host:port (got 'nowhere')`,
      `${GATEWAY}:6: edges[0].routes[1].traffic_policy: no policy file 'policies/missing.yaml' (policy files: policies/api.yaml)`,
    ]);
  });
});

describe("route table", () => {
  const table = buildRouteTable(
    config(
      lines(
        "edges:",
        "  - id: exact",
        "    hostnames: [api.example.com, '[::1]']",
        "    routes:",
        "      - { id: root, match: /, upstream: echo }",
        "      - { id: api, match: /api, upstream: 'https://origin.test' }",
        "      - { id: api-v2, match: /api/v2/, upstream: echo }",
        "  - id: wild",
        "    hostnames: ['*.example.com']",
        "    routes:",
        "      - { id: only-api, match: /api, upstream: echo }",
        "  - id: deeper",
        "    hostnames: ['*.eu.example.com']",
        "    routes:",
        "      - { id: all, match: /, upstream: echo }",
        "  - id: fallback",
        "    hostnames: ['*']",
        "    routes:",
        "      - { id: any, match: /, upstream: management }",
      ),
    ),
  );
  const route = (host: string, path: string) => {
    const found = table.match(host, path);
    return found && `${found.edgeId}/${found.id}`;
  };

  it("an exact host name wins over wildcards, case-insensitively", () => {
    expect(route("api.example.com", "/")).toBe("exact/root");
    expect(route("API.Example.COM", "/")).toBe("exact/root");
    expect(route("[::1]", "/")).toBe("exact/root");
  });

  it("'*.domain' matches any depth of subdomain but not the domain itself", () => {
    expect(route("www.example.com", "/api")).toBe("wild/only-api");
    expect(route("a.b.example.com", "/api")).toBe("wild/only-api");
    expect(route("example.com", "/")).toBe("fallback/any");
    expect(route("notexample.com", "/")).toBe("fallback/any");
  });

  it("the longest wildcard wins", () => {
    expect(route("shop.eu.example.com", "/")).toBe("deeper/all");
  });

  it("'*' catches every other host", () => {
    expect(route("elsewhere.test", "/anything")).toBe("fallback/any");
  });

  it("the longest matching prefix wins", () => {
    expect(route("api.example.com", "/api/v2/users")).toBe("exact/api-v2");
    expect(route("api.example.com", "/api/v2")).toBe("exact/api-v2");
    expect(route("api.example.com", "/api/v1/users")).toBe("exact/api");
    expect(route("api.example.com", "/other")).toBe("exact/root");
  });

  it("'/api' matches /api and /api/x but not /apix", () => {
    expect(route("www.example.com", "/api")).toBe("wild/only-api");
    expect(route("www.example.com", "/api/")).toBe("wild/only-api");
    expect(route("www.example.com", "/api/x")).toBe("wild/only-api");
    expect(route("www.example.com", "/apix")).toBeUndefined();
    expect(route("api.example.com", "/apix")).toBe("exact/root");
  });

  it("a route carries its parsed upstream and the table finds edges by id", () => {
    expect(table.match("api.example.com", "/api")?.upstream).toEqual({ kind: "origin", url: new URL("https://origin.test") });
    expect(table.edge("wild")?.hostnames).toEqual(["*.example.com"]);
    expect(table.edge("missing")).toBeUndefined();
  });

  it("without '*', an unknown host has no route", () => {
    const small = buildRouteTable(config(oneRoute("id: r1", "match: /", "upstream: echo")));
    expect(small.match("b.test", "/")).toBeUndefined();
    expect(small.match("a.test", "/")?.id).toBe("r1");
  });
});

describe("the committed policies/ directory", () => {
  const root = fileURLToPath(new URL("../../..", import.meta.url));
  const listFiles = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((name) => {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) return listFiles(path);
        return /\.(ya?ml|json)$/.test(name) ? [path] : [];
      });
  const files = Object.fromEntries(listFiles(join(root, "policies")).map((path) => [relative(root, path).split("\\").join("/"), readFileSync(path, "utf8")]));

  it("loads without a single problem", () => {
    const result = loadGatewayConfig(files);
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([]);
  });

  it("routes every declared host name and prefix to its own route", () => {
    const loaded = config(files[GATEWAY], files);
    const table = buildRouteTable(loaded);
    for (const edge of loaded.edges) {
      for (const hostname of edge.hostnames) {
        const host = hostname === "*" ? "any-host.test" : hostname.replace(/^\*\./, "sub.");
        for (const route of edge.routes) {
          const matched = table.match(host, route.match);
          expect(matched && `${matched.edgeId}/${matched.id}`, `${host}${route.match}`).toBe(`${edge.id}/${route.id}`);
        }
      }
    }
  });
});
