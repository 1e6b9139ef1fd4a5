/**
 * `npm run bench:cel-cost`: nanoseconds of Node CPU per CEL budget unit, for the worst input we know of each
 * function within the static bounds (16 KiB header values and URL, the expression bounds). Each case is
 * evaluated on fresh exchanges under the request's budget, as the gateway does (a case the budget cuts off
 * costs what it did before the cut); what the meter charged and the time taken give ns per unit, and
 * × MAX_CEL_WORK_PER_REQUEST what a request whose whole budget went to that shape would cost. The figures
 * go into docs/security.md. BENCH_ONLY=<text> runs the cases whose name holds it.
 */

import { compileValueExpression } from "../../src/policy/cel.ts";
import { EvaluationBudget, MAX_CEL_WORK_PER_REQUEST } from "../../src/policy/evaluation-budget.ts";
import type { Exchange } from "../../src/policy/exchange.ts";
import { makeExchange, type ExchangeOptions } from "../../test/unit/support/exchange.ts";
import { fromEnv } from "../shared/config.ts";
import { median } from "../shared/stats.ts";
import { HOSTILE_CASES } from "../../test/unit/policy/cel-hostile-cases.ts";

const MIN_MS = fromEnv("BENCH_MIN_MS", 300, { min: 10 });
const ROUNDS = fromEnv("BENCH_ROUNDS", 3, { min: 1 });
const ONLY = process.env.BENCH_ONLY;

function exchanges(options: ExchangeOptions, count: number): Exchange[] {
  return Array.from({ length: count }, () => makeExchange({ ...options, budget: new EvaluationBudget() }));
}

interface Row {
  name: string;
  units: number;
  /** Milliseconds of one evaluation. */
  ms: number;
  nsPerUnit: number;
}

function measure(name: string, source: string, options: ExchangeOptions): Row {
  const compiled = compileValueExpression(source, "inbound");
  if (!compiled.ok) throw new Error(`${name}: ${compiled.message}`);
  const expression = compiled.expression;
  const [probe] = exchanges(options, 1);
  expression.evaluate(probe!);
  // Past the budget, the units of the call that crossed it were charged but not spent.
  const units = Math.min(MAX_CEL_WORK_PER_REQUEST, MAX_CEL_WORK_PER_REQUEST - probe!.budget.celWorkLeft());
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let reps = 0;
    let elapsed = 0;
    while (elapsed < MIN_MS) {
      const batch = exchanges(options, 8);
      const start = process.hrtime.bigint();
      for (const exchange of batch) expression.evaluate(exchange);
      elapsed += Number(process.hrtime.bigint() - start) / 1e6;
      reps += batch.length;
    }
    rounds.push((elapsed * 1e6) / reps);
  }
  const ns = median(rounds);
  return { name, units, ms: ns / 1e6, nsPerUnit: ns / units };
}

const rows: Row[] = [];
for (const hostile of HOSTILE_CASES) {
  if (ONLY && !hostile.name.includes(ONLY)) continue;
  rows.push(measure(hostile.name, hostile.source, hostile.exchange));
}
rows.sort((a, b) => b.nsPerUnit - a.nsPerUnit);
console.log(`node ${process.version}; median of ${ROUNDS} rounds of ≥ ${MIN_MS} ms each`);
console.log(`${"case".padEnd(52)} ${"units".padStart(8)} ${"ms".padStart(8)} ${"ns/unit".padStart(8)} ${"ms at full budget".padStart(18)}`);
for (const row of rows) {
  const full = (row.nsPerUnit * MAX_CEL_WORK_PER_REQUEST) / 1e6;
  const cells = [String(row.units).padStart(8), row.ms.toFixed(3).padStart(8), row.nsPerUnit.toFixed(1).padStart(8), full.toFixed(1).padStart(18)];
  console.log(`${row.name.padEnd(52)} ${cells.join(" ")}`);
}
