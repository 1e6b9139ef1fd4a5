/**
 * The route modules (circuit breaker, websocket TCP converter) as the gateway applies them, and the
 * isolate's memory of them: each route's modules are read from the store at most once per
 * MODULES_TTL_MS, so a route's traffic costs no store call per request and a change through the
 * management API takes effect within MODULES_TTL_MS (plus one store read: while one request re-reads,
 * the others go on with what was remembered).
 *
 * Only resolved values are shared between requests: workerd ties I/O to the request that started
 * it, so a request must never await a store call that another request made.
 */

export const MODULES_TTL_MS = 2_000;
/**
 * Routes remembered at most. Keys are route labels from policies/gateway.yaml (never client input), so
 * a deployment's routes normally all fit; past it the route read from the store longest ago is
 * forgotten, which only costs a store call.
 */
export const MAX_REMEMBERED_ROUTES = 1_024;

/**
 * What the gateway reads of a route's modules. The management API's stored modules (its zod schemas)
 * satisfy this; worker.ts hands them over, so the gateway does not depend on the management layer.
 */
export interface RouteModules {
  readonly circuit_breaker?: {
    readonly enabled: boolean;
    /** Seconds. */
    readonly tripped_duration: number;
    /** Seconds. */
    readonly rolling_window: number;
    readonly num_buckets: number;
    readonly volume_threshold: number;
    /** 0 … 1 */
    readonly error_threshold_percentage: number;
  };
  readonly websocket_tcp_converter?: { readonly enabled: boolean };
}

export interface RouteModulesCacheOptions {
  readonly now?: () => number;
  readonly ttlMs?: number;
  readonly maxEntries?: number;
}

interface Remembered {
  readonly until: number;
  readonly modules: RouteModules;
  /** When a request began re-reading these expired modules (0: none is). */
  refreshingSince: number;
}

/** One isolate's memory of route modules; worker.ts keeps one per isolate in its IsolateState. */
export class RouteModulesCache {
  private readonly now: () => number;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly remembered = new Map<string, Remembered>();

  constructor({ now = Date.now, ttlMs = MODULES_TTL_MS, maxEntries = MAX_REMEMBERED_ROUTES }: RouteModulesCacheOptions = {}) {
    this.now = now;
    this.ttlMs = ttlMs;
    this.maxEntries = Math.max(1, maxEntries);
  }

  /** Routes remembered right now. */
  get size(): number {
    return this.remembered.size;
  }

  /**
   * The modules to apply to a request of route `label` without waiting (the per-request path): the remembered ones
   * while fresh, and also once expired while another request re-reads them, so one request reads the store per
   * expiry instead of every request that arrives during the read. Undefined: this request should `get` them.
   */
  current(label: string): RouteModules | undefined {
    const hit = this.remembered.get(label);
    if (!hit) return undefined;
    const now = this.now();
    if (hit.until > now) return hit.modules;
    // A re-read that never finished (its request was cancelled) stops holding the others after one TTL.
    if (hit.refreshingSince !== 0 && now - hit.refreshingSince < this.ttlMs) return hit.modules;
    return undefined;
  }

  /**
   * The modules of route `label`: remembered ones while fresh, else what `read` answers. If `read`
   * fails, the last known modules (or none) and the failure is logged: the route keeps serving.
   */
  async get(label: string, read: () => Promise<RouteModules>): Promise<RouteModules> {
    const hit = this.remembered.get(label);
    if (hit && hit.until > this.now()) return hit.modules;
    if (hit) hit.refreshingSince = this.now();
    try {
      const modules = await read();
      this.remember(label, modules);
      return modules;
    } catch (error) {
      console.error(`route ${label}: cannot read its modules, serving without them: ${(error as Error).message}`);
      return hit?.modules ?? {};
    }
  }

  private remember(label: string, modules: RouteModules): void {
    // Most recently stored last, so the first entry is the one to forget.
    this.remembered.delete(label);
    if (this.remembered.size >= this.maxEntries) this.remembered.delete(this.remembered.keys().next().value!);
    this.remembered.set(label, { until: this.now() + this.ttlMs, modules, refreshingSince: 0 });
  }
}
