/**
 * The gateways bench/gateway/policy-size.ts measures, as policy files (path under the repository → text): routes with
 * N entries before a rate limit, and gateways of many policy files for an isolate's first request.
 */

/** Entries before the rate limit on the measured routes (63 + the rate limit fill a phase's 64). */
export const ENTRY_COUNTS = [1, 10, 63] as const;

/** Marks the line a failing expression writes (src/policy/expression-error-log.ts). */
export const EXPRESSION_ERROR_MARKER = "traffic policy: expression";

/** Path of the route with `entries` entries before its rate limit (0: the rate limit alone). */
export const entriesPath = (entries: number) => `/entries-${entries}`;
export const BARE_PATH = "/bare";

/**
 * Entries that never run their action: even ones do not match (`req.method == 'DELETE'`), odd ones fail on
 * an absent header (an index into a missing key is an evaluation error, counted false). A one-entry policy
 * thus has the cheap kind, which makes "63 entries ≤ 1.5 × one" the harder comparison.
 */
function fillerEntries(count: number): string[] {
  return Array.from({ length: count }, (_, index) => {
    const expression = index % 2 === 0 ? "req.method == 'DELETE'" : "req.headers['x-bench-absent'][0] == 'yes'";
    return [`  - name: filler-${index}`, `    expressions: ["${expression}"]`, "    actions: [{ type: deny }]"];
  }).flat();
}

/** A rate limit that never limits (capacity far above what a run sends), keyed by the client address. */
function allowingRateLimit(name: string): string[] {
  return ["  - actions:", "      - type: rate-limit", `        config: { name: ${name}, capacity: 2000000000, rate: 60s, bucket_key: ["conn.client_ip"] }`];
}

function gatewayYaml(routes: ReadonlyArray<{ id: string; match: string; policy?: string }>, origin: string): string {
  return [
    "edges:",
    "  - id: edgpolicysize",
    '    hostnames: ["127.0.0.1", "localhost"]',
    "    routes:",
    ...routes.flatMap((route) => [
      `      - id: ${route.id}`,
      `        match: ${route.match}`,
      `        upstream: ${origin}`,
      ...(route.policy ? [`        traffic_policy: ${route.policy}`] : []),
    ]),
    "",
  ].join("\n");
}

/** A bare route and one route per entry count (0 and ENTRY_COUNTS), every one proxying to `origin`. */
export function entryRouteFiles(origin: string): Record<string, string> {
  const counts = [0, ...ENTRY_COUNTS];
  const files: Record<string, string> = {
    "policies/gateway.yaml": gatewayYaml(
      [{ id: "bare", match: BARE_PATH }, ...counts.map((count) => ({ id: `entries${count}`, match: entriesPath(count), policy: `entries-${count}.yaml` }))],
      origin,
    ),
  };
  for (const count of counts) {
    files[`policies/entries-${count}.yaml`] = ["inbound:", ...fillerEntries(count), ...allowingRateLimit(`entries-${count}`), ""].join("\n");
  }
  return files;
}

/** One route's policy as a deployment might write it: a few gated entries, a rate limit, a response header. */
function routePolicy(index: number): string {
  return [
    "inbound:",
    "  - name: no-bots",
    "    expressions: [\"getReqHeader('user-agent').exists(ua, ua.lowerAscii().contains('bot'))\"]",
    "    actions: [{ type: deny }]",
    "  - name: admin-from-office",
    `    expressions: ["req.url.path.startsWith('/r${index}/admin')", "!inCidrRange(conn.client_ip, '10.0.0.0/8')"]`,
    "    actions: [{ type: custom-response, config: { status_code: 403, body: forbidden } }]",
    "  - name: tagged",
    "    expressions: [\"req.url.path.matches('^/r[0-9]+/v[12]/')\"]",
    "    actions: [{ type: add-headers, config: { headers: { x-api-version: tagged } } }]",
    ...allowingRateLimit(`route-${index}`),
    "outbound:",
    `  - actions: [{ type: add-headers, config: { headers: { x-route: r${index} } } }]`,
    "",
  ].join("\n");
}

/** `files` policy files, one route each (`/r0` … ): what an isolate's first request compiles today. */
export function manyFiles(files: number, origin: string): Record<string, string> {
  const out: Record<string, string> = {
    "policies/gateway.yaml": gatewayYaml(
      Array.from({ length: files }, (_, index) => ({ id: `r${index}`, match: `/r${index}`, policy: `route-${index}.yaml` })),
      origin,
    ),
  };
  for (let index = 0; index < files; index++) out[`policies/route-${index}.yaml`] = routePolicy(index);
  return out;
}
