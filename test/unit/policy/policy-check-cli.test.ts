import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { policyCheck } from "../../../scripts/policy-check.ts";
import { jsonSchemas } from "../../../scripts/policy-schema.ts";
import { actionDefinitions } from "../../../src/policy/schema.ts";
import { readFileSync } from "node:fs";

function repoWith(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "tollgate-policy-check-"));
  mkdirSync(join(root, "policies"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, "policies", name), text);
  return root;
}

const lines = (...text: string[]) => `${text.join("\n")}\n`;

function run(root: string) {
  const lines: string[] = [];
  const errors: string[] = [];
  const code = policyCheck(root, { log: (line) => lines.push(line), error: (line) => errors.push(line) });
  return { code, lines, errors };
}

const gateway = `edges:
  - id: main
    hostnames: ["example.com"]
    routes:
      - id: api
        match: /
        upstream: echo
        traffic_policy: api.yaml
`;

describe("npm run policy:check", () => {
  it("passes the committed policies", () => {
    const result = run(".");
    expect(result).toMatchObject({ code: 0, errors: [] });
    expect(result.lines[0]).toMatch(/^policies\/ OK: \d+ files, 1 edge, \d+ routes$/);
  });

  it("refuses an edge host name under wrangler.toml's TUNNEL_DOMAIN, located", () => {
    const root = repoWith({ "gateway.yaml": gateway.replace('["example.com"]', '["example.com", "api.tunnels.test"]'), "api.yaml": "inbound: []\n" });
    writeFileSync(
      join(root, "wrangler.toml"),
      'name = "t"\nmain = "src/worker.ts"\ncompatibility_date = "2026-04-20"\n\n[vars]\nTUNNEL_DOMAIN = "Tunnels.Test."\n',
    );
    const result = run(root);
    expect(result.code).toBe(1);
    expect(result.errors[0]).toBe(
      "policies/gateway.yaml:3: edges[0].hostnames[1]: host name 'api.tunnels.test' is under the tunnel domain 'tunnels.test' (TUNNEL_DOMAIN), where every host is a tunnel's: use a host name outside it, or another TUNNEL_DOMAIN",
    );
  });

  it("passes a policy written with ngrok's phase names", () => {
    const root = repoWith({ "gateway.yaml": gateway, "api.yaml": "on_http_request:\n  - actions: [{ type: deny }]\non_http_response: []\n" });
    expect(run(root)).toMatchObject({ code: 0, errors: [] });
  });

  it("refuses a policy mixing both phase styles, located", () => {
    const root = repoWith({ "gateway.yaml": gateway, "api.yaml": "inbound: []\non_http_response: []\n" });
    const result = run(root);
    expect(result.code).toBe(1);
    expect(result.errors[0]).toBe(
      "policies/api.yaml:2: on_http_response: cannot be mixed with inbound/outbound in one document: use on_http_request/on_http_response or inbound/outbound",
    );
  });

  it("exits 1 and prints file:line: path: message for each problem", () => {
    const root = repoWith({
      "gateway.yaml": gateway,
      "api.yaml": `inbound:
  - actions:
      - type: rate-limit
        config:
          capacity: 10
          rate: 65s
`,
    });
    expect(run(root)).toEqual({
      code: 1,
      lines: [],
      errors: ["policies/api.yaml:6: inbound[0].actions[0].config.rate: must be a multiple of 10s", "1 problem in policies/"],
    });
  });

  it("reports schema and CEL problems of every file in one pass, located, in file order", () => {
    const root = repoWith({
      "gateway.yaml": lines(
        "edges:",
        "  - id: main",
        '    hostnames: ["Example.com"]',
        "    routes:",
        "      - id: api",
        "        match: /",
        "        upstream: echo",
        "        traffic_policy: api.yaml",
        "      - id: inline",
        "        match: /inline",
        "        upstream: echo",
        "        traffic_policy:",
        "          inbound:",
        '            - expressions: ["req.nope == 1"]',
        "              actions: [{ type: deny }]",
      ),
      // Schema problems in two entries; CEL problems before, between, inside one of them and after them.
      "api.yaml": lines(
        "inbound:",
        '  - expressions: ["req.method ==="]',
        "    actions: [{ type: deny }]",
        "  - expressions: [\"req.method == 'GET'\"]",
        "    actions: [{ type: rate-limit, config: { capacity: 10, rate: 65s } }]",
        "  - expressions: [\"getResHeader('x') == []\"]",
        "    actions: [{ type: nope }]",
        "outbound:",
        '  - expressions: ["res.status == 200"]',
        "    actions: [{ type: deny }]",
      ),
      "zz.yaml": lines("inbound:", '  - expressions: ["conn.ip == 1"]', "    actions: [{ type: deny }]"),
    });
    const result = run(root);
    expect(result.code).toBe(1);
    expect(result.errors).toEqual([
      "policies/api.yaml:2: inbound[0].expressions[0]: invalid CEL: 1:12: found = but expecting end of input",
      "policies/api.yaml:5: inbound[1].actions[0].config.rate: must be a multiple of 10s",
      "policies/api.yaml:6: inbound[2].expressions[0]: invalid CEL: getResHeader is only available in outbound expressions",
      'policies/api.yaml:7: inbound[2].actions[0].type: unknown action type "nope" (expected one of rate-limit, deny, custom-response, add-headers, remove-headers, log, restrict-ips, forward-internal, set-vars, verify-webhook, jwt-validation, url-rewrite, redirect, basic-auth, circuit-breaker)',
      "policies/api.yaml:9: outbound[0].expressions[0]: invalid CEL: unknown field 'status' of res",
      "policies/gateway.yaml:3: edges[0].hostnames[0]: must be a lower-case host name without port, '*.<domain>' or '*'",
      "policies/gateway.yaml:14: edges[0].routes[1].traffic_policy.inbound[0].expressions[0]: invalid CEL: unknown field 'nope' of req",
      "policies/zz.yaml:2: inbound[0].expressions[0]: invalid CEL: unknown field 'ip' of conn",
      "8 problems in policies/",
    ]);
  });

  it("a gateway.yaml that is not YAML takes its place among the files' problems", () => {
    const bad = lines("inbound:", '  - expressions: ["req.nope"]', "    actions: [{ type: deny }]");
    const result = run(repoWith({ "a.yaml": bad, "gateway.yaml": "edges: [\n", "z.yaml": bad }));
    expect(result.errors.map((line) => line.split(":")[0])).toEqual(["policies/a.yaml", "policies/gateway.yaml", "policies/z.yaml", "3 problems in policies/"]);
  });

  it("reports a missing gateway.yaml", () => {
    const result = run(repoWith({ "api.yaml": "inbound: []\n" }));
    expect(result.code).toBe(1);
    expect(result.errors[0]).toBe("policies/gateway.yaml: file is missing");
  });

  it("exits 2 when there is no policies/ directory", () => {
    const result = run(mkdtempSync(join(tmpdir(), "tollgate-empty-")));
    expect(result.code).toBe(2);
    expect(result.errors[0]).toMatch(/^cannot read .*policies: /);
  });
});

describe("JSON Schemas for editors", () => {
  it("schema/ holds what the zod schemas generate now (run npm run policy:schema after changing them)", () => {
    for (const [name, text] of Object.entries(jsonSchemas())) {
      expect(readFileSync(join("schema", name), "utf8"), `schema/${name} is stale`).toBe(text);
    }
  });

  it("the traffic policy schema offers both phase styles, the same entries in each, and forbids mixing them", () => {
    const schema = JSON.parse(jsonSchemas()["traffic-policy.schema.json"]);
    for (const key of ["inbound", "outbound", "on_http_request", "on_http_response"]) {
      expect(schema.properties[key].items).toEqual({ $ref: "#/$defs/TrafficPolicyEntry" });
    }
    expect(schema.not.anyOf).toContainEqual({ required: ["inbound", "on_http_request"] });
    expect(schema.not.anyOf).toHaveLength(4);
  });

  it("the traffic policy schema lists every action type", () => {
    const schema = JSON.parse(jsonSchemas()["traffic-policy.schema.json"]);
    const types = schema.$defs.TrafficPolicyEntry.properties.actions.items.oneOf.map(
      (option: { properties: { type: { const: string } } }) => option.properties.type.const,
    );
    expect(types.sort()).toEqual([...actionDefinitions.keys()].sort());
    expect(types).toContain("set-vars");
  });
});
