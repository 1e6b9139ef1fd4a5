/**
 * The `circuit-breaker` action on the real state machine, its clock set by the test: refusals, probes, enforce,
 * result variables, and every bound of its config with a hostile value.
 */

import { describe, expect, it } from "vitest";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import type { ActionServices, Exchange } from "../../../../src/policy/exchange.ts";
import type { CompiledPolicy } from "../../../../src/policy/compile.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCircuits } from "../../support/memory-circuits.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load, problems } from "../../support/policy-text.ts";

const policy = (config: string, ...more: string[]) =>
  lines("on_http_request:", "  - actions:", "      - type: circuit-breaker", `        config: ${config}`, ...more);

/** Runs the inbound phase; when nothing refused it, the upstream answers `upstream` and the action's observers hear it. */
async function request(
  compiled: CompiledPolicy,
  services: ActionServices,
  upstream: number,
): Promise<{ status: number; exchange: Exchange; response?: Response }> {
  const exchange = makeExchange({ scope: "route:e/r" });
  const response = await runPhase(compiled.inbound, exchange, services);
  if (response) return { status: response.status, exchange, response };
  await Promise.all((exchange.upstreamObservers ?? []).map((observe) => observe(upstream)));
  return { status: upstream, exchange };
}

function setup(config: string, ...more: string[]) {
  const circuits = new MemoryCircuits(1_700_000_000_000);
  return { circuits, compiled: load(policy(config, ...more)), services: { counter: new MemoryCounter(0), breakers: circuits } satisfies ActionServices };
}

describe("circuit-breaker", () => {
  it("trips when the window reaches volume_threshold at error_threshold, then answers 503 ERR_SVC_303 with retry-after", async () => {
    const { compiled, services } = setup("{ error_threshold: 0.5, volume_threshold: 4, tripped_duration: 30s }");
    const statuses = [];
    for (const upstream of [500, 200, 500, 500]) statuses.push((await request(compiled, services, upstream)).status);
    expect(statuses).toEqual([500, 200, 500, 500]);

    const { status, response, exchange } = await request(compiled, services, 200);
    expect(status).toBe(503);
    expect(response!.headers.get("retry-after")).toBe("30");
    expect(response!.headers.get("x-tollgate-circuit")).toBe("open");
    expect(await response!.json()).toMatchObject({
      error_code: "ERR_SVC_303",
      status_code: 503,
      msg: "The circuit breaker of this traffic policy (inbound[0].actions[0]) is open after too many upstream errors; the upstream is not called. Retry after 30s.",
      details: { circuit: "open", retry_after: 30 },
    });
    expect(exchange.vars.circuit_breaker).toEqual({ tripped: true, state: "open" });
  });

  it("after tripped_duration lets one probe through; its success closes the circuit, a failure opens it again", async () => {
    const { compiled, services, circuits } = setup("{ volume_threshold: 2, tripped_duration: 10s }");
    for (let i = 0; i < 2; i++) await request(compiled, services, 502);
    circuits.now += 9_999;
    expect((await request(compiled, services, 200)).status).toBe(503);
    circuits.now += 1;
    const probe = await request(compiled, services, 500);
    expect(probe.status).toBe(500);
    expect(probe.exchange.vars.circuit_breaker).toEqual({ tripped: false, state: "half_open" });
    expect((await request(compiled, services, 200)).status).toBe(503);

    circuits.now += 10_000;
    expect((await request(compiled, services, 200)).status).toBe(200);
    const after = await request(compiled, services, 200);
    expect(after.status).toBe(200);
    expect(after.exchange.vars.circuit_breaker).toEqual({ tripped: false, state: "closed" });
  });

  it("forgets outcomes older than window_duration", async () => {
    const { compiled, services, circuits } = setup("{ volume_threshold: 2, window_duration: 5s, num_buckets: 5 }");
    await request(compiled, services, 500);
    circuits.now += 5_000;
    await request(compiled, services, 500);
    expect((await request(compiled, services, 200)).status).toBe(200);
  });

  it("with enforce: false never refuses, and says which requests the circuit would have refused", async () => {
    const { compiled, services } = setup(
      "{ volume_threshold: 2, enforce: false }",
      "  - expressions: [actions.svc.circuit_breaker.tripped]",
      "    actions:",
      "      - type: add-headers",
      '        config: { headers: { x-would-trip: "${actions.ngrok.circuit_breaker.state}" } }',
    );
    const seen = [];
    for (let i = 0; i < 4; i++) {
      const { status, exchange } = await request(compiled, services, 500);
      seen.push([status, exchange.vars.circuit_breaker.tripped, exchange.request.headers.get("x-would-trip")]);
    }
    expect(seen).toEqual([
      [500, false, null],
      [500, false, null],
      [500, true, "open"],
      [500, true, "open"],
    ]);
  });

  it("ngrok's example loads as written: error_threshold 0 trips on the first answer", async () => {
    const { compiled, services } = setup('{ error_threshold: 0, volume_threshold: 1, window_duration: "60s", tripped_duration: "2m", enforce: true }');
    expect((await request(compiled, services, 200)).status).toBe(200);
    expect((await request(compiled, services, 200)).status).toBe(503);
  });

  it("a config may be left out: ngrok's defaults apply", async () => {
    const compiled = load(lines("on_http_request:", "  - actions:", "      - type: circuit-breaker"));
    const services = { counter: new MemoryCounter(0), breakers: new MemoryCircuits(0) };
    for (let i = 0; i < 10; i++) expect((await request(compiled, services, 503)).status).toBe(503);
    const refused = await request(compiled, services, 200);
    expect(refused.response?.headers.get("retry-after")).toBe("10");
  });

  it("where no gateway protects an upstream (tools running a policy), the circuit reads closed", async () => {
    const { compiled } = setup("{}");
    const { status, exchange } = await request(compiled, { counter: new MemoryCounter(0) }, 500);
    expect(status).toBe(500);
    expect(exchange.vars.circuit_breaker).toEqual({ tripped: false, state: "closed" });
  });
});

describe("circuit-breaker config bounds", () => {
  const CONFIG = "on_http_request[0].actions[0].config";
  const refused = (config: string) => problems(policy(config));
  const at = (field: string, message: string) => `policies/api.yaml:4: ${CONFIG}.${field}: ${message}`;

  it.each([
    ["error_threshold: 1.01", "error_threshold", "must be at most 1"],
    ["error_threshold: -0.1", "error_threshold", "must be at least 0"],
    ["error_threshold: .nan", "error_threshold", "must be a number from 0 to 1, got number NaN"],
    ["error_threshold: .inf", "error_threshold", "must be a number from 0 to 1, got number Infinity"],
    ["volume_threshold: 0", "volume_threshold", "must be at least 1"],
    ["volume_threshold: 2000000001", "volume_threshold", "must be at most 2000000000"],
    ["volume_threshold: 2.5", "volume_threshold", "must be an integer, got number 2.5"],
    ["window_duration: 999ms", "window_duration", "must be at least 1s"],
    ["window_duration: 2m1s", "window_duration", "must be at most 2m"],
    ["window_duration: 9999999999999h", "window_duration", "must be at most 2m"],
    ["window_duration: 10", "window_duration", "must be a duration string such as 10s or 2m, got number 10"],
    ["tripped_duration: 0s", "tripped_duration", "must be at least 1s"],
    ["tripped_duration: 1d", "tripped_duration", "must be a duration such as 10s or 2m (got '1d')"],
    ["tripped_duration: 121s", "tripped_duration", "must be at most 2m"],
    ["num_buckets: 0", "num_buckets", "must be at least 1"],
    ["num_buckets: 129", "num_buckets", "must be at most 128"],
    ["enforce: sometimes", "enforce", 'must be a boolean, got string "sometimes"'],
  ])("refuses %s", (field, path, message) => {
    expect(refused(`{ ${field} }`)).toEqual([at(path, message)]);
  });

  it("refuses 1e300 as neither an integer nor within the bound", () => {
    expect(refused("{ volume_threshold: 1e300 }")).toEqual([
      at("volume_threshold", "must be an integer"),
      at("volume_threshold", "must be at most 2000000000"),
    ]);
  });

  it("refuses a field ngrok does not have (the route module's names among them)", () => {
    expect(refused("{ rolling_window: 10 }")).toEqual([at("rolling_window", "unknown key")]);
  });

  it("accepts the bounds themselves", () => {
    expect(
      refused("{ error_threshold: 0, volume_threshold: 2000000000, window_duration: 2m, tripped_duration: 1s, num_buckets: 128, enforce: false }"),
    ).toEqual([]);
    expect(refused("{ error_threshold: 1, volume_threshold: 1, window_duration: 1s, tripped_duration: 120s, num_buckets: 1 }")).toEqual([]);
  });

  it("runs only on requests, as ngrok's", () => {
    expect(problems(lines("on_http_response:", "  - actions:", "      - type: circuit-breaker"))).toEqual([
      "policies/api.yaml:3: on_http_response[0].actions[0].config: runs only on requests (inbound, ngrok's on_http_request), as ngrok's does",
    ]);
  });
});
