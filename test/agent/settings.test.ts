import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAddr } from "../../src/agent/settings/addr.ts";
import { formatIssue, loadAgentConfig } from "../../src/agent/settings/load.ts";
import { DEFAULT_INSPECT_DB_SIZE, inspectDbBytes } from "../../src/agent/settings/schema.ts";

async function load(text: string) {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-config-"));
  const file = join(dir, "agent.yml");
  await writeFile(file, text);
  const result = await loadAgentConfig(file);
  return { file, result, errors: result.ok ? [] : result.issues.map(formatIssue).map((line) => line.replace(`${file}:`, "agent.yml:")) };
}

describe("agent config file", () => {
  it("applies the defaults: the local edge, the development key, the API on 127.0.0.1:4040", async () => {
    const { result } = await load("tunnels:\n  web:\n    addr: 3000\n");
    expect(result).toEqual({
      ok: true,
      config: {
        server_addr: "http://127.0.0.1:8787",
        api_key: "tgk_dev_local_only_0000000000000000",
        web_addr: "127.0.0.1:4040",
        web_allow_hosts: [],
        inspect_db_size: 0,
        log_format: "logfmt",
        log_level: "info",
        console_ui: "iftty",
        tunnels: { web: { addr: 3000, inspect: true } },
      },
    });
    expect(inspectDbBytes({ inspect_db_size: 0 })).toBe(DEFAULT_INSPECT_DB_SIZE);
  });

  it("reads every key of a full file, labels as a map or as key=value strings", async () => {
    const { result } = await load(`version: 1
server_addr: https://edge.example.com
api_key: tgk_live_x
web_addr: false
web_allow_hosts: [agent.internal]
inspect_db_size: 1048576
metadata: laptop
tunnels:
  web:
    proto: http
    addr: localhost:8080
    inspect: false
    metadata: web
    subdomain: myapp
    traffic_policy:
      inbound:
        - actions:
            - type: deny
  api:
    addr: https://localhost:8443
    labels: ["edge=edghts_1", "app=api"]
`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.web_addr).toBe(false);
    expect(result.config.tunnels.api.labels).toEqual({ edge: "edghts_1", app: "api" });
    expect(result.config.tunnels.web).toMatchObject({ proto: "http", inspect: false, subdomain: "myapp" });
  });

  it.each([
    ["tunnels:\n  web:\n    addr: 3000\n    colour: red\n", "agent.yml:4: tunnels.web.colour: unknown key"],
    ["tunnels:\n  web:\n    proto: ftp\n    addr: 3000\n", 'agent.yml:3: tunnels.web.proto: must be one of "http", "tcp", "tls", got string "ftp"'],
    ["tunnels:\n  web:\n    proto: http\n", "agent.yml:2: tunnels.web.addr: is required"],
    ["tunnels:\n  web:\n    addr: 70000\n", "agent.yml:3: tunnels.web.addr: port 70000 is out of range (1 to 65535)"],
    ["web_addr: 4040\n", "agent.yml:1: web_addr: must be host:port, or false to turn the agent API off"],
    ["server_addr: edge.example.com\n", "agent.yml:1: server_addr: must be the edge's URL, e.g. http://127.0.0.1:8787 or https://edge.example.com"],
    ["inspect_db_size: -1\n", "agent.yml:1: inspect_db_size: must be 0 (the default, 50 MB) or more"],
    ["version: 4\n", "agent.yml:1: version: must be 1 (Tollgate's format), or 2 or 3 (ngrok's)"],
    ["tunnels:\n  web:\n    addr: 1\n    labels: {a: b}\n    proto: http\n", "agent.yml:4: tunnels.web.labels: a tunnel has either labels or proto, not both"],
    [
      "tunnels:\n  web:\n    addr: 1\n    labels: {a: b}\n    pooling_enabled: true\n",
      "agent.yml:5: tunnels.web.pooling_enabled: a labeled tunnel has no public host, so no pool to join",
    ],
    ["tunnels:\n  web:\n    addr: 1\n    pooling_enabled: 1\n", "agent.yml:4: tunnels.web.pooling_enabled: must be true or false"],
    [
      "tunnels:\n  web:\n    addr: 1\n    traffic_policy:\n      inbound:\n        - actions:\n            - type: rate-limit\n              config: {name: x, algorithm: sliding_window, capacity: 1, rate: 7s, bucket_key: [conn.client_ip]}\n",
      "agent.yml:8: tunnels.web.traffic_policy.inbound[0].actions[0].config.rate:",
    ],
    ["tunnels: [1]\n", "agent.yml:1: tunnels: must be a map of tunnel name to tunnel definition"],
    ["a: [\n", "agent.yml:2: invalid YAML:"],
  ])("names the key and line of a mistake: %j", async (text, error) => {
    const { errors } = await load(text);
    expect(errors.join("\n")).toContain(error);
  });

  it("says when the file is missing", async () => {
    const result = await loadAgentConfig("/nonexistent/agent.yml");
    expect(!result.ok && formatIssue(result.issues[0])).toBe("/nonexistent/agent.yml: cannot read the config file: no such file");
  });
});

describe("addr", () => {
  it.each([
    [3000, "http://localhost:3000"],
    ["8080", "http://localhost:8080"],
    ["10.0.0.2:9000", "http://10.0.0.2:9000"],
    ["https://localhost:8443", "https://localhost:8443"],
    ["http://[::1]:3000", "http://[::1]:3000"],
  ])("%j forwards to %s", (addr, url) => {
    const parsed = parseAddr(addr);
    expect(parsed.ok && parsed.url.origin).toBe(url);
  });

  it.each([
    [0, "port 0 is out of range (1 to 65535)"],
    ["ftp://x:21", "scheme ftp is not supported (http or https)"],
    ["http://localhost:3000/app", "must not have a path, query or fragment"],
    ["localhost", '"localhost" needs a port (host:port)'],
  ])("refuses %j: %s", (addr, message) => {
    expect(parseAddr(addr)).toEqual({ ok: false, message });
  });
});
