/** The `log` and `restrict-ips` actions: behaviour, and the exact message of each validation failure. */

import { describe, expect, it } from "vitest";
import type { CompiledPolicy } from "../../../../src/policy/compile.ts";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import type { ActionServices } from "../../../../src/policy/exchange.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load, POLICY_FILE as FILE, problems } from "../../support/policy-text.ts";

const T0 = 1_700_000_000_000;

/** One action of `type` in `phase`; its config lines start on line 5. */
const action = (type: string, config: string[], phase = "inbound") =>
  lines(`${phase}:`, "  - actions:", `      - type: ${type}`, "        config:", ...config.map((line) => `          ${line}`));

/** Services whose sink keeps the log records. */
function recording(counter = new MemoryCounter(T0)): ActionServices & { records: Array<Readonly<Record<string, unknown>>> } {
  const records: Array<Readonly<Record<string, unknown>>> = [];
  return { counter, records, decisions: { rateLimit: () => undefined, log: (record) => void records.push(record) } };
}

describe("log", () => {
  it("writes one record per execution with its metadata, variables interpolated after the rate limit ran", async () => {
    const policy = load(
      lines(
        "on_http_request:",
        "  - actions:",
        "      - type: rate-limit",
        "        config: { name: per-client, capacity: 1, rate: 60s, enforce: false }",
        "      - type: log",
        "        config:",
        "          metadata:",
        "            message: limit check",
        "            limited: ${actions.svc.rate_limit.limited}",
        "            who: 'client ${conn.client_ip} on ${req.url.path}'",
        "            weight: 3",
      ),
    );
    const services = recording();
    for (let i = 0; i < 2; i++) await runPhase(policy.inbound, makeExchange({ url: "https://a.test/orders", clientIp: "192.0.2.1" }), services);
    expect(services.records).toEqual([
      {
        route: "edge/route",
        action: "inbound[0].actions[1]",
        phase: "inbound",
        metadata: { message: "limit check", limited: false, who: "client 192.0.2.1 on /orders", weight: 3 },
      },
      {
        route: "edge/route",
        action: "inbound[0].actions[1]",
        phase: "inbound",
        metadata: { message: "limit check", limited: true, who: "client 192.0.2.1 on /orders", weight: 3 },
      },
    ]);
  });

  it("cuts an interpolated value at 1024 characters", async () => {
    const policy = load(action("log", ["metadata: { key: '${actions.svc.rate_limit.bucket_key}' }"]));
    const services = recording();
    const exchange = makeExchange();
    exchange.vars.rate_limit.bucket_key = "k".repeat(5_000);
    await runPhase(policy.inbound, exchange, services);
    expect((services.records[0].metadata as { key: string }).key).toHaveLength(1024);
  });

  it("outbound, it can log the response status", async () => {
    const policy = load(action("log", ["metadata: { status: '${res.status_code}' }"], "outbound"));
    const services = recording();
    await runPhase(policy.outbound, makeExchange({ response: { status: 503 } }), services);
    expect(services.records[0].metadata).toEqual({ status: 503 });
  });

  it("an unknown variable is refused at the metadata key", () => {
    expect(problems(action("log", ["metadata:", "  who: '${conn.client}'"]))).toEqual([
      `${FILE}:6: inbound[0].actions[0].config.metadata.who: \${conn.client}: invalid CEL: unknown field 'client' of conn`,
    ]);
  });

  it("a response variable in the request phase is refused", () => {
    expect(problems(action("log", ["metadata:", "  status: '${res.status_code}'"]))).toEqual([
      `${FILE}:6: inbound[0].actions[0].config.metadata.status: \${res.status_code}: invalid CEL: res is only available in outbound expressions`,
    ]);
  });

  it("a value that is a map is refused", () => {
    expect(problems(action("log", ["metadata:", "  nested: { a: 1 }"]))).toEqual([
      `${FILE}:6: inbound[0].actions[0].config.metadata.nested: must be a string, number or boolean`,
    ]);
  });

  it("a value of 1025 characters is refused", () => {
    expect(problems(action("log", ["metadata:", `  long: ${"v".repeat(1025)}`]))).toEqual([
      `${FILE}:6: inbound[0].actions[0].config.metadata.long: must be at most 1024 characters`,
    ]);
  });

  it("a key of 65 characters is refused", () => {
    expect(problems(action("log", ["metadata:", `  ${"k".repeat(65)}: 1`]))).toEqual([
      `${FILE}:6: inbound[0].actions[0].config.metadata.${"k".repeat(65)}: must be at most 64 characters`,
    ]);
  });

  it("17 keys are refused", () => {
    expect(problems(action("log", ["metadata:", ...Array.from({ length: 17 }, (_, i) => `  k${i}: ${i}`)]))).toEqual([
      `${FILE}:5: inbound[0].actions[0].config.metadata: exceeds the limit of 16 keys`,
    ]);
  });

  it("empty metadata is refused", () => {
    expect(problems(action("log", ["metadata: {}"]))).toEqual([`${FILE}:5: inbound[0].actions[0].config.metadata: must have at least 1 key`]);
  });
});

describe("restrict-ips", () => {
  const restrict = (...config: string[]) => load(action("restrict-ips", config));
  const status = async (policy: CompiledPolicy, ip: string) =>
    (await runPhase(policy.inbound, makeExchange({ clientIp: ip }), { counter: new MemoryCounter(T0) }))?.status ?? 200;

  it("allows only addresses in an allow CIDR and in no deny CIDR", async () => {
    const policy = restrict("allow: [203.0.113.0/24, '2001:db8::/32']", "deny: [203.0.113.66/32]");
    expect(await status(policy, "203.0.113.7")).toBe(200);
    expect(await status(policy, "2001:db8::1")).toBe(200);
    expect(await status(policy, "::ffff:203.0.113.8")).toBe(200);
    expect(await status(policy, "203.0.113.66")).toBe(403);
    expect(await status(policy, "198.51.100.1")).toBe(403);
    expect(await status(policy, "not an address")).toBe(403);
  });

  it("with only deny, every other address passes", async () => {
    const policy = restrict("deny: [10.0.0.0/8]");
    expect(await status(policy, "10.1.2.3")).toBe(403);
    expect(await status(policy, "192.0.2.1")).toBe(200);
    expect(await status(policy, "")).toBe(200);
  });

  it("the 403 uses the error envelope naming the action", async () => {
    const response = await runPhase(restrict("allow: [10.0.0.0/8]").inbound, makeExchange({ clientIp: "192.0.2.1" }), { counter: new MemoryCounter(T0) });
    expect(await response?.json()).toMatchObject({ error_code: "ERR_SVC_300", status_code: 403, details: { action: "inbound[0].actions[0]" } });
  });

  it("enforce: false lets the request through and a later entry sees denied", async () => {
    const policy = load(
      lines(
        "inbound:",
        "  - actions:",
        "      - type: restrict-ips",
        "        config: { allow: [10.0.0.0/8], enforce: false }",
        "  - expressions: ['actions.svc.restrict_ips.denied']",
        "    actions:",
        "      - type: add-headers",
        "        config: { headers: { x-outside-allow-list: 'yes' } }",
      ),
    );
    const exchange = makeExchange({ clientIp: "192.0.2.1" });
    expect(await runPhase(policy.inbound, exchange, { counter: new MemoryCounter(T0) })).toBeUndefined();
    expect(exchange.request.headers.get("x-outside-allow-list")).toBe("yes");
  });

  it("a bad CIDR names file, line and path", () => {
    expect(problems(action("restrict-ips", ["allow:", "  - 10.0.0.0/8", "  - 10.0.0.300/8"]))).toEqual([
      `${FILE}:7: inbound[0].actions[0].config.allow[1]: must be a CIDR such as 203.0.113.0/24 or 2001:db8::/32 (got '10.0.0.300/8')`,
    ]);
  });

  it("an address without a prefix length stands for itself alone (as ngrok reads it); a bad one is refused", async () => {
    const policy = load(action("restrict-ips", ["deny: ['2001:db8::1', 198.51.100.42]"]));
    const at = async (clientIp: string) => (await runPhase(policy.inbound, makeExchange({ clientIp }), { counter: new MemoryCounter(T0) }))?.status;
    expect([await at("2001:db8::1"), await at("2001:db8::2"), await at("198.51.100.42"), await at("198.51.100.43")]).toEqual([403, undefined, 403, undefined]);
    expect(problems(action("restrict-ips", ["deny: ['2001:db8::g']"]))).toEqual([
      `${FILE}:5: inbound[0].actions[0].config.deny[0]: must be a CIDR such as 203.0.113.0/24 or 2001:db8::/32 (got '2001:db8::g')`,
    ]);
  });

  it("ngrok's ip_policies is refused, pointing at allow and deny", () => {
    expect(problems(action("restrict-ips", ["ip_policies: [ipp_1yjqdrIBwgciY2I9zH2EelgBbJF]", "allow: [10.0.0.0/8]"]))).toEqual([
      `${FILE}:5: inbound[0].actions[0].config.ip_policies: is not supported: IP policies are objects of ngrok's API that Tollgate has no store for; list their CIDRs under allow or deny`,
    ]);
  });

  it("257 CIDRs are refused", () => {
    expect(problems(action("restrict-ips", [`allow: [${Array.from({ length: 257 }, (_, i) => `10.0.${i >> 8}.${i & 255}/32`).join(", ")}]`]))).toEqual([
      `${FILE}:5: inbound[0].actions[0].config.allow: exceeds the limit of 256 CIDRs`,
    ]);
  });

  it("neither allow nor deny is refused", () => {
    expect(problems(action("restrict-ips", ["enforce: true"]))).toEqual([`${FILE}:4: inbound[0].actions[0].config: must have allow or deny`]);
  });

  it("an empty list is refused", () => {
    expect(problems(action("restrict-ips", ["allow: []"]))).toEqual([`${FILE}:5: inbound[0].actions[0].config.allow: must have at least 1 CIDR`]);
  });

  it("enforce must be a boolean", () => {
    expect(problems(action("restrict-ips", ["allow: [10.0.0.0/8]", "enforce: 1"]))).toEqual([
      `${FILE}:6: inbound[0].actions[0].config.enforce: must be a boolean, got number 1`,
    ]);
  });
});
