/**
 * Bindings and variables the Worker receives: generated from wrangler.toml by `wrangler types` into
 * worker-configuration.d.ts (`npm run types`; CI fails when it is stale), plus the bindings a deployment
 * may add that wrangler.toml leaves out.
 */
export type Env = Cloudflare.Env & {
  /** Optional Workers Analytics Engine dataset: one data point per rate-limit decision (docs/rate-limits.md). */
  readonly RATE_LIMIT_ANALYTICS?: AnalyticsEngineDataset;
};
