/** The part of measured-core (no bundled types) the agent uses. */
declare module "measured-core" {
  export interface MeterProperties {
    rateUnit?: number;
    tickInterval?: number;
    keepAlive?: boolean;
  }
  export class Meter {
    constructor(properties?: MeterProperties);
    mark(n?: number): void;
    end(): void;
    toJSON(): { mean: number; count: number; currentRate: number; "1MinuteRate": number; "5MinuteRate": number; "15MinuteRate": number };
  }
  /** Forward-decaying reservoir (1028 samples, alpha 0.015: biased to the last ~5 minutes). */
  export class ExponentiallyDecayingSample {
    constructor(options?: { size?: number; alpha?: number });
    update(value: number, timestamp?: number): void;
    toArray(): number[];
  }
  const measured: { Meter: typeof Meter; ExponentiallyDecayingSample: typeof ExponentiallyDecayingSample };
  export default measured;
}
