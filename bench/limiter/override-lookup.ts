/**
 * What rate-limit overrides cost on the default path (an account with none): a rate-limit action's run through
 * the policy engine with the overrides service wired, against the same run without it, side by side in one
 * process. The counter answers at once (no object call), so the ratio is the action's own overhead at its most
 * visible; through the real gateway the object call or the lease dominates. Usage: npm run bench:overrides
 */

import { OverrideCache } from "../../src/limiter/override-cache.ts";
import { overrideServices } from "../../src/limiter/override-service.ts";
import { loadPolicy } from "../../src/policy/compile.ts";
import { type EvaluationLog, runPhase } from "../../src/policy/evaluate.ts";
import { EvaluationBudget } from "../../src/policy/evaluation-budget.ts";
import { initialVars } from "../../src/policy/actions/index.ts";
import type { ActionServices, Exchange, RateLimitCounter } from "../../src/policy/exchange.ts";

const policy = loadPolicy(
  "inbound:\n  - actions:\n      - type: rate-limit\n        config: { name: per-client, capacity: 100, rate: 60s, bucket_key: [conn.client_ip] }\n",
  "policies/bench.yaml",
);
if (!policy.ok) throw new Error("the bench policy does not load");
const allowed = { allowed: true, remaining: 99, retryAfterMs: 0, resetMs: 60_000, refillMs: 60_000 };
const counter: RateLimitCounter = { count: async () => ({ ok: true, decision: allowed }) };
const quiet: EvaluationLog = { expressionError: () => {} };
const url = new URL("https://api.example.test/");

function exchange(i: number): Exchange {
  const request = { method: "GET", url, host: url.hostname, headers: new Headers() };
  return { scope: "route:edghts_local/edghtsrt_demo", clientIp: `198.51.100.${i % 250}`, request, vars: initialVars(), budget: new EvaluationBudget() };
}

const services = overrideServices<object>(new OverrideCache(), { read: async () => [], accountOf: () => "acct_dev" });
const env = {};
const withOverrides: ActionServices = { counter, overrides: services(env) };
const without: ActionServices = { counter };
// Fills the copy once: from then on every decision within 900 ms answers from it.
await services(env).find("route:edghts_local/edghtsrt_demo", "per-client", "x");

async function run(chosen: ActionServices, count: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) await runPhase(policy.ok ? policy.policy.inbound : [], exchange(i), chosen, quiet);
  return performance.now() - start;
}

const N = 200_000;
await run(without, 20_000);
await run(withOverrides, 20_000);
const rounds: number[] = [];
for (let round = 0; round < 5; round++) {
  const base = await run(without, N);
  const wired = await run(withOverrides, N);
  rounds.push(wired / base);
  console.log(
    `round ${round + 1}: without ${((base * 1e6) / N).toFixed(0)} ns/run, with overrides ${((wired * 1e6) / N).toFixed(0)} ns/run, ratio ${(wired / base).toFixed(3)}`,
  );
}
rounds.sort((a, b) => a - b);
console.log(`median ratio (with / without): ${rounds[2]!.toFixed(3)}`);

// The lookup alone: what the default path adds per decision.
const service = services(env);
const M = 2_000_000;
const lookups: number[] = [];
for (let round = 0; round < 5; round++) {
  const start = performance.now();
  for (let i = 0; i < M; i++) {
    // Past 900 ms the copy is read again (here at once, as an account with no overrides answers): awaited, as a request would.
    const found = service.find("route:edghts_local/edghtsrt_demo", "per-client", "198.51.100.7");
    if (found instanceof Promise) await found;
  }
  lookups.push(((performance.now() - start) * 1e6) / M);
}
lookups.sort((a, b) => a - b);
console.log(`the lookup alone (no overrides in the account): median ${lookups[2]!.toFixed(0)} ns`);
