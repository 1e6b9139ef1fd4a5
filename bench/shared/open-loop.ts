/**
 * Open-loop load at a fixed rate: request i is due at start + i / rate, whatever became of the earlier ones, and
 * its latency is counted from when it was due, not from when a free connection sent it. A closed loop (autocannon's
 * N connections, each sending when its last answer came) slows down with the server, so a stall of the server holds
 * back the requests that would have waited on it and hides in the throughput; autocannon's `overallRate` sends each
 * second's quota at the second's start, in a burst, so its latencies measure draining the burst. Here requests
 * arrive evenly, as users' do, and a stall of T ms shows as T ms of latency in every request due during it: what
 * the tail of an allowed path is about.
 */

import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";

export interface OpenLoopOptions {
  /** Requests a second, spaced evenly. */
  readonly rate: number;
  readonly durationSeconds: number;
  /** Most connections open at once (requests due while all are busy wait for one, and that wait is counted). */
  readonly connections: number;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface OpenLoopResult {
  readonly requests: number;
  /** Answers other than 2xx, and requests that failed. */
  readonly failures: number;
  /** Latency from when each request was due, ms. */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** The q-quantile of ascending `sorted` (nearest rank). */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export async function runOpenLoop(url: string, { rate, durationSeconds, connections, headers = {} }: OpenLoopOptions): Promise<OpenLoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const target = new URL(url);
  const total = Math.round(rate * durationSeconds);
  const latencies: number[] = [];
  let failures = 0;
  let sent = 0;
  let settled = 0;
  const start = performance.now();
  const send = (due: number) =>
    new Promise<void>((resolve) => {
      const req = request({ agent, host: target.hostname, port: target.port, path: target.pathname + target.search, method: "GET", headers }, (response) => {
        response.resume();
        response.on("end", () => {
          if (response.statusCode === undefined || response.statusCode >= 300) failures++;
          latencies.push(performance.now() - due);
          resolve();
        });
      });
      req.on("error", () => {
        failures++;
        resolve();
      });
      req.end();
    });
  const inFlight: Promise<void>[] = [];
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now();
      // Every request due by now goes out now, each counted from its own due time.
      while (sent < total && start + (sent * 1000) / rate <= now) {
        const due = start + (sent * 1000) / rate;
        sent++;
        inFlight.push(send(due).then(() => void settled++));
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + (sent * 1000) / rate - performance.now()));
      else done();
    };
    tick();
  });
  await Promise.all(inFlight);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    requests: settled,
    failures,
    p50: round(quantile(latencies, 0.5)),
    p90: round(quantile(latencies, 0.9)),
    p99: round(quantile(latencies, 0.99)),
    p999: round(quantile(latencies, 0.999)),
    max: round(latencies[latencies.length - 1] ?? Number.NaN),
  };
}
