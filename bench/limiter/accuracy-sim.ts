/**
 * The end-to-end accuracy run in virtual time: the accuracy run's bursty schedule (bench/limiter/accuracy.ts) driven
 * through the real isolate memory (src/limiter/isolate-buckets.ts) and the real `take` of the object
 * (src/limiter/sliding-window.ts), with simulated latencies and one CPU queue for the isolate, compared with
 * the exact sliding log. Deterministic and pure: a 100 s run takes milliseconds, so the sources of
 * under-admission can be measured one by one before a real run confirms them.
 */

import { LEASE_MS } from "../../src/limiter/bucket-memory.ts";
import { IsolateBuckets } from "../../src/limiter/isolate-buckets.ts";
import { emptyWindow, take, type WindowSpec, type WindowState } from "../../src/limiter/sliding-window.ts";
import { type Burst, burstySchedule } from "./accuracy.ts";
import { overAdmittedAtPoints, slidingLogDecisions } from "./oracle.ts";
import { seededRandom } from "../shared/stats.ts";

export interface SimulatedLatencies {
  /** Client to isolate and back, each way (ms, uniform in [low, high]). */
  readonly network: readonly [number, number];
  /** Isolate to object and back, each way. */
  readonly object: readonly [number, number];
  /** Upstream round trip of an admitted request. */
  readonly upstream: readonly [number, number];
  /** CPU time the isolate spends on one request (its single thread is a FIFO queue). */
  readonly cpu: readonly [number, number];
}

/** Roughly what the bench machine shows: a few ms a request, more under concurrency (the CPU queue). */
export const BENCH_LATENCIES: SimulatedLatencies = { network: [0.2, 1.5], object: [0.5, 3], upstream: [1, 4], cpu: [0.3, 0.9] };

export interface SimulationOptions {
  readonly spec: WindowSpec;
  readonly durationMs: number;
  /** Seed of the schedule (as BENCH_SEED). */
  readonly seed: number;
  /** Replaces the accuracy run's schedule (e.g. one long burst: a closed loop of `concurrency` connections). */
  readonly schedule?: readonly Burst[];
  /** Seed of the latencies and of where the run starts relative to the clock's whole seconds. */
  readonly latencySeed?: number;
  readonly latencies?: SimulatedLatencies;
  /** Lease duration the isolate asks for (0: no leases), as limiter-client.ts passes LEASE_MS. */
  readonly leaseMs?: number;
}

export interface SimulationReport {
  readonly requests: number;
  readonly admitted: number;
  readonly oracleAdmitted: number;
  /** Admissions at their exact decision times that found `capacity` others in their window (must be 0). */
  readonly overAdmitted: number;
  readonly underAdmissionPercent: number;
  /** The same against the sliding log fed the times requests reached the isolate (the client's send time removed). */
  readonly underAdmissionAtIsolatePercent: number;
  readonly objectCalls: number;
  readonly leasedAdmissions: number;
  /** Virtual time from the first request sent to the last answer. */
  readonly elapsedMs: number;
}

/** A min-heap of timed callbacks; ties run in the order they were scheduled. */
class Events {
  private readonly heap: Array<{ at: number; seq: number; run: () => void }> = [];
  private seq = 0;
  now = 0;

  at(at: number, run: () => void): void {
    const heap = this.heap;
    heap.push({ at, seq: this.seq++, run });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  runAll(): void {
    const heap = this.heap;
    while (heap.length > 0) {
      const top = heap[0]!;
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        let i = 0;
        for (;;) {
          const left = 2 * i + 1;
          const right = left + 1;
          let least = i;
          if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
          if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
          if (least === i) break;
          [heap[i], heap[least]] = [heap[least]!, heap[i]!];
          i = least;
        }
      }
      this.now = top.at;
      top.run();
    }
  }
}

function before(a: { at: number; seq: number }, b: { at: number; seq: number }): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Runs the accuracy schedule through one isolate and one object in virtual time. */
export function simulateAccuracy({
  spec,
  durationMs,
  seed,
  latencySeed = seed,
  latencies = BENCH_LATENCIES,
  leaseMs = LEASE_MS,
  schedule,
}: SimulationOptions): SimulationReport {
  const random = seededRandom(latencySeed);
  const between = ([low, high]: readonly [number, number]) => low + random() * (high - low);
  // Whole milliseconds, as Date.now() gives, from a start anywhere inside a second (leases and sub-windows align to the clock).
  const origin = 1_700_000_000_000 + Math.floor(random() * 1000);
  const events = new Events();
  const clock = () => Math.floor(origin + events.now);
  const buckets = new IsolateBuckets({ now: clock });
  let state: WindowState = emptyWindow;
  let cpuFreeAt = 0;
  /** Runs `work` on the isolate's single thread: after whatever is queued before it. */
  const onIsolate = (arrives: number, work: () => void) => {
    const start = Math.max(arrives, cpuFreeAt);
    cpuFreeAt = start + between(latencies.cpu);
    events.at(start, work);
  };
  const sentTimes: number[] = [];
  const arrivedTimes: number[] = [];
  const admittedAt: number[] = [];

  const request = (done: () => void) => {
    sentTimes.push(events.now);
    /** Answers the client; `admittedAt` is the clock when the admission was decided (undefined: 429). */
    const answer = (at: number | undefined) => {
      if (at !== undefined) admittedAt.push(at);
      events.at(events.now + (at !== undefined ? between(latencies.upstream) : 0) + between(latencies.network), done);
    };
    onIsolate(events.now + between(latencies.network), () => {
      arrivedTimes.push(events.now);
      // As the gateway runs it: a due renewal goes out on its own, after the request that found it due.
      const consulted = buckets.consult("accuracy", true);
      if ("decision" in consulted) {
        const renewal = consulted.renewal;
        if (renewal) {
          events.at(events.now + between(latencies.object), () => {
            const result = take(state, clock(), spec, renewal.want, leaseMs, renewal.returned, false);
            state = result.state;
            events.at(events.now + between(latencies.object), () => onIsolate(events.now, () => buckets.settleRenewal("accuracy", renewal, result.decision)));
          });
        }
        return answer(consulted.decision.allowed ? clock() : undefined);
      }
      events.at(events.now + between(latencies.object), () => {
        const decidedAt = clock();
        const result = take(state, decidedAt, spec, consulted.want, leaseMs, consulted.returned);
        state = result.state;
        events.at(events.now + between(latencies.object), () =>
          onIsolate(events.now, () => {
            const decision = buckets.settle("accuracy", consulted, result.decision);
            // An admission the object granted happened when it decided; a leased one the isolate used in place of a refusal, now.
            answer(decision.allowed ? (result.decision.allowed ? decidedAt : clock()) : undefined);
          }),
        );
      });
    });
  };

  let requests = 0;
  for (const burst of schedule ?? burstySchedule(seed, durationMs)) {
    let left = burst.requests;
    requests += left;
    const worker = () => {
      if (left <= 0) return;
      left--;
      request(worker);
    };
    events.at(burst.at, () => {
      for (let i = 0; i < Math.min(burst.concurrency, burst.requests); i++) worker();
    });
  }
  events.runAll();

  admittedAt.sort((a, b) => a - b);
  const oracleAdmitted = slidingLogDecisions(sentTimes, spec.capacity, spec.windowMs).filter(Boolean).length;
  const atIsolate = slidingLogDecisions(arrivedTimes, spec.capacity, spec.windowMs).filter(Boolean).length;
  return {
    requests,
    admitted: admittedAt.length,
    oracleAdmitted,
    overAdmitted: overAdmittedAtPoints(admittedAt, spec.capacity, spec.windowMs),
    underAdmissionPercent: (100 * (oracleAdmitted - admittedAt.length)) / oracleAdmitted,
    underAdmissionAtIsolatePercent: (100 * (atIsolate - admittedAt.length)) / atIsolate,
    objectCalls: buckets.stats.objectCalls,
    leasedAdmissions: buckets.stats.leasedAdmissions,
    elapsedMs: events.now,
  };
}
