/** Renders the results: the console table, the target checks, the accuracy lines and a Markdown table for the README. */

import type { AccuracyReport } from "../limiter/accuracy.ts";
import type { AlgorithmAccuracy } from "../limiter/algorithm-accuracy.ts";
import type { Check, Row } from "./summary.ts";

const COLUMNS = ["target", "req/s", "p50 ms", "p99 ms", "× bare", "CPU µs/req", "429 share", "retry-after on 429", "object calls / 429", "errors"] as const;

function percent(share: number | undefined, digits = 1): string {
  return share === undefined ? "" : `${(share * 100).toFixed(digits)} %`;
}

function cells(row: Row): string[] {
  const flood = row.target.kind === "flood";
  return [
    row.target.label,
    row.requestsPerSecond.toFixed(0),
    row.p50.toFixed(0),
    row.p99.toFixed(0),
    `${row.ratioToBare.toFixed(2)} ×`,
    row.cpuMicrosPerRequest === undefined ? "" : row.cpuMicrosPerRequest.toFixed(0),
    flood ? percent(row.limitedShare, 2) : "",
    flood ? (row.retryAfterShare === 1 ? "yes (all)" : row.retryAfterShare === 0 ? "no" : `partly (${percent(row.retryAfterShare)})`) : "",
    flood
      ? row.objectCallsPer429 === undefined
        ? "n/a"
        : row.objectCallsPer429.toFixed(row.objectCallsPer429 < 0.01 ? 4 : 2)
      : row.objectCallsPerRequest !== undefined
        ? `(${row.objectCallsPerRequest.toFixed(2)} per request)`
        : "",
    row.failOpen > 0 ? `${row.failures} (+${row.failOpen} uncounted)` : String(row.failures),
  ];
}

export function textTable(rows: readonly Row[]): string {
  const lines = [COLUMNS.slice(), ...rows.map(cells)];
  const widths = COLUMNS.map((_, column) => Math.max(...lines.map((line) => line[column]!.length)));
  return lines
    .map((line, index) => {
      const text = line.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  ");
      return index === 0 ? `${text}\n${"-".repeat(text.length)}` : text;
    })
    .join("\n");
}

export function markdownTable(rows: readonly Row[]): string {
  const header = `| ${COLUMNS.join(" | ")} |`;
  const rule = `|${COLUMNS.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`;
  return [header, rule, ...rows.map((row) => `| ${cells(row).join(" | ")} |`)].join("\n");
}

export function checkLines(checks: readonly Check[]): string {
  return checks
    .map((check) => {
      const value =
        check.unit === "×" ? `${check.measured.toFixed(2)} ×` : `${Number.isInteger(check.measured) ? check.measured : check.measured.toFixed(4)}${check.unit}`;
      const wanted = `${check.relation} ${check.wanted}${check.unit === "×" ? " ×" : check.unit}`;
      return `${check.pass ? "PASS" : "MISS"}  ${check.name}: ${value} (target ${wanted})${check.caveat ? ` — not trustworthy: ${check.caveat}` : ""}`;
    })
    .join("\n");
}

export function accuracyLines(run: AccuracyReport | undefined, algorithm: AlgorithmAccuracy, capacity: number, rate: string, uncounted: number): string {
  const lines: string[] = [];
  if (run) {
    lines.push(
      `end to end (real time, one bucket, capacity ${capacity} per ${rate}, bursts of concurrency 1–50): ` +
        `${run.requests} requests in ${(run.elapsedMs / 1000).toFixed(0)} s; admitted ${run.admitted}, exact sliding log ${run.oracleAdmitted}; ` +
        `over-admitted ${run.overAdmitted} (busiest window ${run.busiestWindow}); under-admission ${run.underAdmissionPercent.toFixed(2)} %; ` +
        `429 without retry-after ${run.limitedWithoutRetryAfter}; failed ${run.failures}; passed uncounted (fail-open) ${uncounted}`,
    );
    if (run.failures > 0) lines.push(`  failed requests (an admission may hide among them): ${run.failureSamples.join("; ")}`);
  } else {
    lines.push("end to end: skipped (BENCH_ACCURACY_SECONDS=0)");
  }
  lines.push(
    `algorithm (src/limiter/sliding-window.ts, simulated time): ${algorithm.traces} traces × ${algorithm.windowsPerTrace} windows, ` +
      `${algorithm.requests} requests; admitted ${algorithm.admitted}, exact sliding log ${algorithm.oracleAdmitted}; ` +
      `over-admitted ${algorithm.overAdmitted}; under-admission ${algorithm.underAdmissionPercent.toFixed(2)} % (worst trace ${algorithm.worstUnderAdmissionPercent.toFixed(2)} %)`,
  );
  return lines.join("\n");
}
