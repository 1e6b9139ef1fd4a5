/** The gateway.yaml of a bench: one edge on 127.0.0.1 and localhost, its routes to one upstream origin. */

export interface BenchRoute {
  readonly id: string;
  /** The path prefix, e.g. `/victim`. */
  readonly match: string;
  /** A policy file under policies/, when the route has one. */
  readonly policy?: string;
}

export function localEdgeYaml(edgeId: string, origin: string, routes: readonly BenchRoute[]): string {
  const lines = ["edges:", `  - id: ${edgeId}`, '    hostnames: ["127.0.0.1", "localhost"]', "    routes:"];
  for (const route of routes) {
    lines.push(`      - id: ${route.id}`, `        match: ${route.match}`, `        upstream: ${origin}`);
    if (route.policy) lines.push(`        traffic_policy: ${route.policy}`);
  }
  return [...lines, ""].join("\n");
}
