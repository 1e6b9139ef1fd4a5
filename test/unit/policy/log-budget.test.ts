/** What `log` actions and failing expressions may write: a per-request budget, an isolate-wide rate, one line per expression a second. */

import { describe, expect, it } from "vitest";
import { DecisionLog } from "../../../src/limiter/decision-log.ts";
import { decisionSink } from "../../../src/gateway/decision-sink.ts";
import type { CompiledEntry } from "../../../src/policy/compile.ts";
import { runPhase } from "../../../src/policy/evaluate.ts";
import { MAX_LOG_BYTES_PER_REQUEST } from "../../../src/policy/evaluation-budget.ts";
import type { ActionServices } from "../../../src/policy/exchange.ts";
import {
  ERROR_LOG_INTERVAL_MS,
  ExpressionErrorLog,
  MAX_ERROR_FIELD_CHARS,
  MAX_ERROR_LINES_PER_SECOND,
  MAX_REMEMBERED_EXPRESSIONS,
} from "../../../src/policy/expression-error-log.ts";
import { makeExchange } from "../support/exchange.ts";
import { MemoryCounter } from "../support/memory-counter.ts";
import { lines, load } from "../support/policy-text.ts";

const T0 = 1_700_000_000_000;
const LONG_URL = `https://a.test/${"p".repeat(16 * 1024)}`;

/**
 * The review's amplifier, as large as the policy's 4096 characters of expressions now admit (`${…}` counted):
 * 21 log actions of 16 keys (in entries of at most 16 actions), each value a template of the whole path.
 */
function amplifier(): string {
  const metadata = Array.from({ length: 16 }, (_, key) => `            k${key}: 'x\${req.url.path}'`);
  const logAction = ["      - type: log", "        config:", "          metadata:", ...metadata];
  const entry = (actions: number) => ["  - actions:", ...Array.from({ length: actions }, () => logAction).flat()];
  return lines("inbound:", ...entry(16), ...entry(5));
}

function recording(): ActionServices & { records: Array<Readonly<Record<string, unknown>>> } {
  const records: Array<Readonly<Record<string, unknown>>> = [];
  return { counter: new MemoryCounter(T0), records, decisions: { rateLimit: () => undefined, log: (record) => void records.push(record) } };
}

describe("log output of one request", () => {
  it(`the review's amplifier, 21 × 16 interpolated values (344 KiB unbounded), writes at most ${MAX_LOG_BYTES_PER_REQUEST} characters of metadata a request`, async () => {
    const policy = load(amplifier());
    const services = recording();
    await runPhase(policy.inbound, makeExchange({ url: LONG_URL }), services);
    const written = services.records.map((record) => JSON.stringify(record).length).reduce((a, b) => a + b, 0);
    expect(written).toBeLessThanOrEqual(MAX_LOG_BYTES_PER_REQUEST);
    expect(services.records.length).toBeGreaterThan(0);
    expect(services.records.length).toBeLessThan(21);
    // The next request has its own budget.
    const next = recording();
    await runPhase(policy.inbound, makeExchange({ url: LONG_URL }), next);
    expect(next.records.length).toBe(services.records.length);
  });

  it("a record that does not fit the budget is dropped and counted in the request's next written record", async () => {
    // Quotes double in JSON, so 16 values of 1,024 of them need twice what the budget has left.
    const quoted = Array.from({ length: 16 }, (_, key) => `            k${key}: '\${conn.client_ip}'`);
    const policy = load(
      lines(
        "inbound:",
        "  - actions:",
        "      - type: log",
        "        config:",
        "          metadata:",
        ...quoted,
        "      - type: log",
        "        config:",
        "          metadata: { small: 1 }",
      ),
    );
    const services = recording();
    await runPhase(policy.inbound, makeExchange({ clientIp: '"'.repeat(1024) }), services);
    expect(services.records).toEqual([{ route: "edge/route", action: "inbound[0].actions[1]", phase: "inbound", metadata: { small: 1 }, dropped_before: 1 }]);
  });

  it("whole records count, not only their metadata: many tiny records stay within the budget", async () => {
    const tiny = Array.from({ length: 16 }, () => ["      - type: log", "        config:", "          metadata: { a: 1 }"]).flat();
    const entries = Array.from({ length: 22 }, () => ["  - actions:", ...tiny]).flat();
    const policy = load(lines("inbound:", ...entries));
    const services = recording();
    await runPhase(policy.inbound, makeExchange(), services);
    const written = services.records.map((record) => JSON.stringify(record).length + 320).reduce((a, b) => a + b, 0);
    expect(written).toBeLessThanOrEqual(MAX_LOG_BYTES_PER_REQUEST);
    expect(services.records.length).toBeLessThan(22 * 16);
  });

  it("a template is cut while it is put together, never longer than 1024 characters", async () => {
    const policy = load(
      lines("inbound:", "  - actions:", "      - type: log", "        config:", "          metadata: { k: 'a${req.url.path}b${req.url.path}c' }"),
    );
    const services = recording();
    await runPhase(policy.inbound, makeExchange({ url: LONG_URL }), services);
    const value = (services.records[0].metadata as { k: string }).k;
    expect(value).toHaveLength(1024);
    expect(value.startsWith("a/ppp")).toBe(true);
  });
});

describe("log output of the isolate", () => {
  it("log records share a characters-per-second allowance with decision lines; the dropped are counted in the next line", () => {
    let now = T0;
    const log = new DecisionLog({ now: () => now, maxCharsPerSecond: 1000 });
    const written: string[] = [];
    const sink = decisionSink({ ingress: "test", log, write: (line) => written.push(line) });
    const record = { route: "r", action: "a", phase: "inbound", metadata: { v: "x".repeat(300) } };
    for (let i = 0; i < 5; i++) sink.log(record);
    expect(written).toHaveLength(2);
    now += 1000;
    sink.log(record);
    expect(JSON.parse(written[2])).toMatchObject({ event: "traffic_policy.log", dropped_by_rate: 3, metadata: { v: "x".repeat(300) } });
  });
});

describe("failing expressions", () => {
  const entry = (name: string): CompiledEntry => ({ name, expressions: [], actions: [] });

  it("write one line per expression a second, with how many failures went unlogged", () => {
    let now = T0;
    const lines: string[] = [];
    const log = new ExpressionErrorLog({ now: () => now, write: (line) => lines.push(line) });
    const failing = entry("limits");
    for (let i = 0; i < 1000; i++) log.expressionError(failing, "req.headers['x'][0] == 'y'", "no such key: x");
    expect(lines).toEqual([`traffic policy: expression "req.headers['x'][0] == 'y'" of entry "limits" failed (no such key: x); the entry is skipped`]);
    now += ERROR_LOG_INTERVAL_MS;
    log.expressionError(failing, "req.headers['x'][0] == 'y'", "no such key: x");
    expect(lines[1]).toMatch(/\(and 999 more times since its last line\)$/);
  });

  it("run through a phase, 1000 requests a second of a failing expression write one line a second", async () => {
    let now = T0;
    const written: string[] = [];
    const log = new ExpressionErrorLog({ now: () => now, write: (line) => written.push(line) });
    const policy = load(lines("inbound:", "  - name: tier", "    expressions: [\"req.headers['x-tier'][0] == 'gold'\"]", "    actions: [{ type: deny }]"));
    const perSecond: number[] = [];
    for (let second = 0; second < 3; second++) {
      const before = written.length;
      for (let i = 0; i < 1000; i++, now++) await runPhase(policy.inbound, makeExchange(), { counter: new MemoryCounter(now) }, log);
      perSecond.push(written.length - before);
    }
    expect(perSecond).toEqual([1, 1, 1]);
    expect(written[1]).toBe(
      `traffic policy: expression "req.headers['x-tier'][0] == 'gold'" of entry "tier" failed (field not found: x-tier); the entry is skipped (and 999 more times since its last line)`,
    );
  });

  it(`cut the expression, the entry name and the error at ${MAX_ERROR_FIELD_CHARS} characters each`, () => {
    const lines: string[] = [];
    const log = new ExpressionErrorLog({ now: () => T0, write: (line) => lines.push(line) });
    log.expressionError(entry("n".repeat(10_000)), "s".repeat(1000), `Unable to convert string '${"x".repeat(120_000)}' to bool`);
    expect(lines[0].length).toBeLessThan(4 * MAX_ERROR_FIELD_CHARS);
  });

  it("count the failures of an expression refused by the isolate's cap in that expression's next line", () => {
    let now = T0;
    const lines: string[] = [];
    const log = new ExpressionErrorLog({ now: () => now, write: (line) => lines.push(line) });
    for (let i = 0; i < MAX_ERROR_LINES_PER_SECOND; i++) log.expressionError(entry(`noisy${i}`), "x", "boom");
    const quiet = entry("quiet");
    log.expressionError(quiet, "y", "boom");
    log.expressionError(quiet, "y", "boom");
    now += 1000;
    log.expressionError(quiet, "y", "boom");
    expect(lines.at(-1)).toMatch(/of entry "quiet" failed \(boom\); the entry is skipped \(and 2 more times since its last line\)$/);
  });

  it(`write at most ${MAX_ERROR_LINES_PER_SECOND} lines a second from the isolate, and remember at most ${MAX_REMEMBERED_EXPRESSIONS} expressions`, () => {
    const now = T0;
    const lines: string[] = [];
    const log = new ExpressionErrorLog({ now: () => now, write: (line) => lines.push(line) });
    for (let i = 0; i < 5 * MAX_REMEMBERED_EXPRESSIONS; i++) log.expressionError(entry(`e${i}`), `x${i}`, "boom");
    expect(lines).toHaveLength(MAX_ERROR_LINES_PER_SECOND);
    expect((log as unknown as { memories: Map<string, unknown> }).memories.size).toBeLessThanOrEqual(MAX_REMEMBERED_EXPRESSIONS);
  });
});
