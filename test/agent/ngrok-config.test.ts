import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { formatIssue, formatNotice, parseAgentConfig, readConfigFile } from "../../src/agent/settings/load.ts";
import { closedPort } from "../support/upstream.ts";

async function check(text: string) {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-ngrok-config-"));
  const file = join(dir, "ngrok.yml");
  await writeFile(file, text);
  const result = await readConfigFile(file);
  return { result, errors: result.ok ? [] : result.issues.map(formatIssue).map((line) => line.replace(`${file}:`, "ngrok.yml:")) };
}

// ngrok's documented v2 example, unadapted.
const NGROK_V2_EXAMPLE = `version: 2
authtoken: 4nq9771bPxe8ctg7LKr_2ClH7Y15Zqe4bWLWF9p
api_key: 24yRd5U3DestCQapJrrVHLOqiAC_7RviwRqpd3wc9dKLujQZN
connect_timeout: 30s
console_ui: true
console_ui_color: transparent
dns_resolver_ips:
  - 1.1.1.1
  - 8.8.8.8
heartbeat_interval: 1m
heartbeat_tolerance: 5s
inspect_db_size: 104857600 # 100mb
log_level: info
log_format: json
log: /var/log/ngrok.log
metadata: '{"serial": "00012xa-33rUtz9", "comment": "For customer alan@example.com"}'
proxy_url: socks5://localhost:9150
region: us
remote_management: false
root_cas: trusted
server_addr: example.com:443
tls_client_crt: /path/to/certificate.crt
tls_client_key: /path/to/certificate.key
update_channel: stable
update_check: false
web_addr: localhost:4040
tunnels:
  website:
    addr: 8888
    basic_auth:
      - "bob:bobpassword"
    schemes:
      - https
    host_header: "myapp.dev"
    inspect: false
    proto: http
    domain: myapp.ngrok.dev
  e2etls:
    addr: 9000
    proto: tls
    domain: myapp.example.com
    crt: example.crt
    key: example.key
  ssh-access:
    addr: 22
    proto: tcp
    remote_addr: 1.tcp.ngrok.io:12345
`;

describe("ngrok config files", () => {
  it("ngrok's v2 example: every key Tollgate refuses is named with its line, in one run (ignored keys are not refused)", async () => {
    const { errors } = await check(NGROK_V2_EXAMPLE);
    expect(errors).toEqual([
      "ngrok.yml:3: api_key: authtoken and api_key differ: Tollgate has one credential (its API key), so give one of them",
      "ngrok.yml:7: dns_resolver_ips: not supported by Tollgate: the agent uses the system resolver; remove it",
      "ngrok.yml:17: proxy_url: not supported by Tollgate: the agent connects to the edge directly; remove it",
      "ngrok.yml:20: root_cas: not supported by Tollgate: the agent trusts Node's CA store; remove it",
      "ngrok.yml:22: tls_client_crt: not supported by Tollgate: the edge authenticates agents by API key, not client certificates; remove it",
      "ngrok.yml:23: tls_client_key: not supported by Tollgate: the edge authenticates agents by API key, not client certificates; remove it",
      "ngrok.yml:30: tunnels.website.basic_auth: not supported by Tollgate: basic auth is not a Tollgate tunnel feature; protect the service itself or use a traffic policy",
      "ngrok.yml:32: tunnels.website.schemes: not supported by Tollgate: the edge decides the scheme of public URLs; remove it",
      "ngrok.yml:34: tunnels.website.host_header: not supported by Tollgate: the local service receives the public Host header; remove it",
      "ngrok.yml:40: tunnels.e2etls.proto: tls tunnels are not supported: Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)",
      "ngrok.yml:42: tunnels.e2etls.crt: not supported by Tollgate: Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)",
      "ngrok.yml:43: tunnels.e2etls.key: not supported by Tollgate: Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)",
      "ngrok.yml:46: tunnels.ssh-access.proto: tcp tunnels are not supported: Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)",
      "ngrok.yml:47: tunnels.ssh-access.remote_addr: not supported by Tollgate: Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)",
    ]);
  });

  it("reads the keys that mean nothing here, ignoring each with a located notice that says why", async () => {
    const { result } = await check(
      "version: 3\nagent:\n  authtoken: tok\n  update_check: false\n  update_channel: stable\n  console_ui_color: transparent\n  heartbeat_interval: 1m\n  heartbeat_tolerance: 5s\n  connect_timeout: 30s\n  crl_noverify: true\n  remote_management: false\n",
    );
    expect(result.ok && result.file.config.api_key).toBe("tok");
    expect(result.ok && result.file.notices.map(formatNotice).map((line) => line.replace(/^.*ngrok\.yml:/, "ngrok.yml:"))).toEqual([
      "ngrok.yml:4: agent.update_check: ignored: Tollgate does not update itself (npm does)",
      "ngrok.yml:5: agent.update_channel: ignored: Tollgate does not update itself (npm does)",
      "ngrok.yml:6: agent.console_ui_color: ignored: the status screen takes the terminal's colours (NO_COLOR turns them off)",
      "ngrok.yml:7: agent.heartbeat_interval: ignored: the edge sets the heartbeat (TUNNEL_HEARTBEAT_MS)",
      "ngrok.yml:8: agent.heartbeat_tolerance: ignored: the edge sets the heartbeat (TUNNEL_HEARTBEAT_MS)",
      "ngrok.yml:9: agent.connect_timeout: ignored: the agent gives the edge 10 s to answer its connection",
      "ngrok.yml:10: agent.crl_noverify: ignored: the agent checks no certificate revocation list",
      "ngrok.yml:11: agent.remote_management: ignored: the agent has no remote management",
    ]);
  });

  it("ngrok's v2 example: the keys ignored, each with its line", async () => {
    const { result } = await check(
      NGROK_V2_EXAMPLE.split("\n")
        .filter((line) => /^(version|connect_timeout|console_ui_color|heartbeat_\w+|remote_management|update_\w+):/.test(line))
        .join("\n"),
    );
    expect(result.ok && result.file.notices.map((notice) => `${notice.line}: ${notice.path.join(".")}`)).toEqual([
      "2: connect_timeout",
      "3: console_ui_color",
      "4: heartbeat_interval",
      "5: heartbeat_tolerance",
      "6: remote_management",
      "7: update_channel",
      "8: update_check",
    ]);
  });

  it("maps a v2 file's keys onto Tollgate's meaning", async () => {
    const { result } = await check(
      "version: 2\nauthtoken: tok\nserver_addr: edge.example.com:443\nregion: eu\nlog: stdout\ntunnels:\n  web:\n    addr: 8888\n    hostname: myapp.example.com\n",
    );
    expect(result.ok && result.file.config).toMatchObject({
      api_key: "tok",
      server_addr: "https://edge.example.com:443",
      region: "eu",
      log: "stdout",
      tunnels: { web: { addr: 8888, subdomain: "myapp" } },
    });
  });

  it("maps pooling_enabled of a v3 endpoint (ngrok's redundant-agents example) onto the tunnel", async () => {
    const { result } = await check(
      "version: 3\nendpoints:\n  - name: my-service\n    url: https://service.example.com\n    pooling_enabled: true\n    upstream:\n      url: http://localhost:8080\n",
    );
    expect(result.ok && result.file.config).toMatchObject({ tunnels: { "my-service": { subdomain: "service", pooling_enabled: true } } });
  });

  it("maps a v3 file's agent and endpoints: url → subdomain, upstream.url → addr, traffic_policy and metadata kept", async () => {
    const { result } = await check(
      "version: 3\nagent:\n  authtoken: tok\n  connect_url: http://127.0.0.1:8787\nendpoints:\n  - name: web\n    url: https://web.ngrok.app\n    upstream:\n      url: http://localhost:8080\n      protocol: http1\n    metadata: m\n    bindings: [public]\n    traffic_policy:\n      on_http_request:\n        - actions: [{type: deny}]\n",
    );
    expect(result.ok && result.file.config).toMatchObject({
      api_key: "tok",
      server_addr: "http://127.0.0.1:8787",
      tunnels: {
        web: {
          proto: "http",
          addr: "http://localhost:8080",
          subdomain: "web",
          metadata: "m",
          traffic_policy: { on_http_request: [{ actions: [{ type: "deny" }] }] },
        },
      },
    });
  });

  it.each([
    ["version: 3\nauthtoken: x\n", "ngrok.yml:2: authtoken: belongs under agent: in a version 3 file"],
    [
      "version: 3\nendpoints:\n  - name: db\n    url: tcp://1.tcp.ngrok.io:12345\n    upstream: {url: 5432}\n",
      "ngrok.yml:4: endpoints[0].url: tcp:// endpoints are not supported: Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)",
    ],
    [
      "version: 3\nendpoints:\n  - name: web\n    url: https://*.example.com\n    upstream: {url: 80}\n",
      "ngrok.yml:4: endpoints[0].url: wildcard host names are not supported",
    ],
    ["version: 3\nendpoints:\n  - name: web\n", "ngrok.yml:3: endpoints[0].upstream.url: is required"],
    ["version: 3\nendpoints:\n  - name: web\n    upstream: {url: 99999}\n", "ngrok.yml:4: endpoints[0].upstream.url: port 99999 is out of range (1 to 65535)"],
    [
      "version: 3\nendpoints:\n  - name: web\n    upstream: {url: 80, protocol: http2}\n",
      "ngrok.yml:4: endpoints[0].upstream.protocol: only http1 is supported",
    ],
    [
      "version: 3\nendpoints:\n  - name: web\n    upstream: {url: 80}\n    bindings: [internal]\n",
      'ngrok.yml:5: endpoints[0].bindings: only ["public"] is supported',
    ],
    [
      "version: 3\nendpoints:\n  - name: web\n    upstream: {url: 80}\n    pooling_enabled: yes please\n",
      "ngrok.yml:5: endpoints[0].pooling_enabled: must be true or false",
    ],
    [
      "version: 3\nendpoints:\n  - name: web\n    upstream: {url: 80}\n    description: hi\n",
      "ngrok.yml:5: endpoints[0].description: not supported by Tollgate: use metadata",
    ],
    [
      "version: 3\ntunnels:\n  web: {addr: 80}\nendpoints:\n  - name: web\n    upstream: {url: 80}\n",
      'ngrok.yml:5: endpoints[0].name: a tunnel or endpoint named "web" is defined twice',
    ],
    ["version: 3\nagent:\n  log_format: xml\n", 'ngrok.yml:3: agent.log_format: must be one of "logfmt", "json", "term"'],
    ["version: 3\nagent:\n  web_addr: 4040\n", "ngrok.yml:3: agent.web_addr: must be host:port"],
    ["version: 2\ntunnels:\n  web:\n    addr: 80\n    colour: red\n", "ngrok.yml:5: tunnels.web.colour: unknown key"],
    ["version: 3\nagent:\n  update_chek: false\n", "ngrok.yml:3: agent.update_chek: unknown key"],
    ["version: 2\nupdate-check: false\n", "ngrok.yml:2: update-check: unknown key"],
    ["version: 3\nagent:\n  remote_management: true\n", "ngrok.yml:3: agent.remote_management: not supported by Tollgate: the agent has no remote management"],
    ["version: 3\nupdate_check: false\n", "ngrok.yml:2: update_check: belongs under agent: in a version 3 file"],
  ])("refuses by name and line: %j", async (text, error) => {
    const { errors } = await check(text);
    expect(errors.join("\n")).toContain(error);
  });
});

describe("POST /api/tunnels before the session is established", () => {
  const agents: Agent[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  });

  it("answers 503 with the details.err ngrok's clients retry on, after dropping the ngrok npm package's own options", async () => {
    const parsed = parseAgentConfig({ server_addr: `http://127.0.0.1:${await closedPort()}`, web_addr: "127.0.0.1:0" });
    if (!parsed.ok) throw new Error("bad config");
    const agent = await startAgent({ config: parsed.config, backoff: { initialMs: 60_000, maxMs: 60_000 } });
    agents.push(agent);
    // Exactly what `ngrok.connect({ addr, authtoken, region, configPath })` posts.
    const body = { addr: 3000, authtoken: "tok", region: "eu", configPath: "/x/ngrok.yml", proto: "http", name: "0b9f6c8e-5d1f-4e41-9d1f-2f0c1e6a4b7a" };
    const response = await fetch(`${agent.apiUrl}/api/tunnels`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({
      error_code: 109,
      status_code: 503,
      details: { err: "a successful ngrok tunnel session has not yet been established" },
    });
  });
});
