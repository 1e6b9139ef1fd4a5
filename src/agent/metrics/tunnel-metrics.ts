/**
 * Per-tunnel metrics in the shape of the agent API: `conns` (relayed streams) and `http` (requests), each
 * a count, 1/5/15-minute exponentially weighted rates in events per second (measured-core meters, ticking
 * every 5 s) and p50/p90/p95/p99 durations in nanoseconds over an exponentially decaying sample biased to
 * the last 5 minutes (measured-core's reservoir, 1028 samples, as go-metrics timers use).
 * `conns.gauge` is the number open now.
 */

import measured from "measured-core";
import type { ExchangeObserver, ExchangeTap } from "../edge/exchange.ts";

export interface MeterSnapshot {
  count: number;
  rate1: number;
  rate5: number;
  rate15: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
}

export interface TunnelMetricsSnapshot {
  conns: MeterSnapshot & { gauge: number };
  http: MeterSnapshot;
}

/** The q-quantile of sorted values, interpolated between neighbours as measured-core's histogram does. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const position = q * (sorted.length + 1);
  if (position < 1) return sorted[0];
  if (position >= sorted.length) return sorted[sorted.length - 1];
  const lower = sorted[Math.floor(position) - 1];
  const upper = sorted[Math.floor(position)];
  return lower + (position - Math.floor(position)) * (upper - lower);
}

class TimedMeter {
  private readonly meter = new measured.Meter();
  private readonly durations = new measured.ExponentiallyDecayingSample();

  mark(): void {
    this.meter.mark();
  }

  record(durationNs: number): void {
    this.durations.update(durationNs);
  }

  snapshot(): MeterSnapshot {
    const rates = this.meter.toJSON();
    const sorted = this.durations.toArray().sort((a, b) => a - b);
    const ns = (q: number) => Math.round(quantile(sorted, q));
    return {
      count: rates.count,
      rate1: rates["1MinuteRate"],
      rate5: rates["5MinuteRate"],
      rate15: rates["15MinuteRate"],
      p50: ns(0.5),
      p90: ns(0.9),
      p95: ns(0.95),
      p99: ns(0.99),
    };
  }

  end(): void {
    this.meter.end();
  }
}

export class TunnelMetrics {
  private readonly conns = new TimedMeter();
  private readonly http = new TimedMeter();
  private open = 0;

  /** Observes every exchange of the tunnel. */
  readonly tap: ExchangeTap = {
    open: (): ExchangeObserver => {
      this.conns.mark();
      this.http.mark();
      this.open++;
      let responded = false;
      return {
        onResponseEnd: (elapsedNs) => {
          responded = true;
          this.http.record(Number(elapsedNs));
        },
        onClose: ({ durationNs }) => {
          this.open--;
          if (!responded) this.http.record(Number(durationNs));
          this.conns.record(Number(durationNs));
        },
      };
    },
  };

  snapshot(): TunnelMetricsSnapshot {
    const { count, ...rest } = this.conns.snapshot();
    return { conns: { count, gauge: this.open, ...rest }, http: this.http.snapshot() };
  }

  /** Stops the meters' timers. */
  close(): void {
    this.conns.end();
    this.http.end();
  }
}
