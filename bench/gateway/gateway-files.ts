import { costAccuracyPolicy } from "../limiter/accuracy-costs.ts";

/**
 * The bench-only gateway config, in the shape scripts/bundle-policies.mjs produces
 * (path under the repository → file text). It replaces src/generated/policy-files.ts in the
 * bench bundle only; the committed policies/ are never touched.
 */

/** Rate-limit settings of the benchmarked routes (the peer is configured with the same numbers). */
export const LIMITS = {
  /** So high that the allowed path never limits. */
  allowed: { capacity: 2_000_000_000, rate: "60s", windowMs: 60_000 },
  /** So low that nearly every request of a flood gets 429. */
  flood: { capacity: 10, rate: "60s", windowMs: 60_000 },
  /** The accuracy run: one bucket, driven past its capacity for more than a window. */
  accuracy: { capacity: 100, rate: "60s", windowMs: 60_000 },
} as const;

/** Request header that names the accuracy run's bucket (a fresh bucket per run). */
export const ACCURACY_BUCKET_HEADER = "x-bench-bucket";

export const PATHS = {
  bare: "/bare",
  limited: "/limited",
  rollout: "/rollout",
  flood: "/flood",
  accuracy: "/accuracy",
  costAccuracy: "/accuracy-costs",
} as const;

/** `extra`: further config lines, e.g. `enforce: false`. */
function rateLimitPolicy(name: string, capacity: number, rate: string, bucketKey: string, extra: readonly string[] = []): string {
  return [
    "inbound:",
    "  - actions:",
    "      - type: rate-limit",
    "        config:",
    `          name: ${name}`,
    "          algorithm: sliding_window",
    `          capacity: ${capacity}`,
    `          rate: ${rate}`,
    ...extra.map((line) => `          ${line}`),
    "          bucket_key:",
    `            - ${JSON.stringify(bucketKey)}`,
    "",
  ].join("\n");
}

/** The policy files of the bench gateway, every route proxying to `origin`. */
export function benchPolicyFiles(origin: string): Record<string, string> {
  const gateway = [
    "edges:",
    "  - id: edghts_bench",
    '    hostnames: ["127.0.0.1", "localhost"]',
    "    routes:",
    "      - id: edghtsrt_bare",
    `        match: ${PATHS.bare}`,
    `        upstream: ${origin}`,
    "      - id: edghtsrt_limited",
    `        match: ${PATHS.limited}`,
    `        upstream: ${origin}`,
    "        traffic_policy: bench-allowed.yaml",
    // The allowed path again with what a roll-out turns on: shadow mode and RateLimit header fields.
    "      - id: edghtsrt_rollout",
    `        match: ${PATHS.rollout}`,
    `        upstream: ${origin}`,
    "        traffic_policy: bench-rollout.yaml",
    "      - id: edghtsrt_flood",
    `        match: ${PATHS.flood}`,
    `        upstream: ${origin}`,
    "        traffic_policy: bench-flood.yaml",
    "      - id: edghtsrt_accuracy",
    `        match: ${PATHS.accuracy}`,
    `        upstream: ${origin}`,
    "        traffic_policy: bench-accuracy.yaml",
    // Costs, several windows and settles (bench/limiter/accuracy-costs.ts).
    "      - id: edghtsrt_accuracy_costs",
    `        match: ${PATHS.costAccuracy}`,
    `        upstream: ${origin}`,
    "        traffic_policy: bench-accuracy-costs.yaml",
    "",
  ].join("\n");
  return {
    "policies/gateway.yaml": gateway,
    "policies/bench-allowed.yaml": rateLimitPolicy("bench-allowed", LIMITS.allowed.capacity, LIMITS.allowed.rate, "conn.client_ip"),
    "policies/bench-rollout.yaml": rateLimitPolicy("bench-rollout", LIMITS.allowed.capacity, LIMITS.allowed.rate, "conn.client_ip", [
      "enforce: false",
      "ratelimit_headers: true",
    ]),
    "policies/bench-flood.yaml": rateLimitPolicy("bench-flood", LIMITS.flood.capacity, LIMITS.flood.rate, "conn.client_ip"),
    "policies/bench-accuracy.yaml": rateLimitPolicy(
      "bench-accuracy",
      LIMITS.accuracy.capacity,
      LIMITS.accuracy.rate,
      `req.headers['${ACCURACY_BUCKET_HEADER}']`,
    ),
    "policies/bench-accuracy-costs.yaml": costAccuracyPolicy("bench-accuracy-costs", `req.headers['${ACCURACY_BUCKET_HEADER}']`),
  };
}
