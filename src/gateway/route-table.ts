/** Finds the route of a request: the edge by host name, then the route with the longest matching path prefix. */

import type { Edge, GatewayConfig, Route } from "./gateway-config.ts";

export interface RouteTable {
  match(hostname: string, path: string): Route | undefined;
  edge(edgeId: string): Edge | undefined;
}

function prefixMatches(prefix: string, path: string): boolean {
  if (prefix === "/") return true;
  return path === prefix || path.startsWith(prefix.endsWith("/") ? prefix : `${prefix}/`);
}

export function buildRouteTable(config: GatewayConfig): RouteTable {
  const exact = new Map<string, Edge>();
  const wildcards: Array<[suffix: string, edge: Edge]> = [];
  let fallback: Edge | undefined;
  for (const edge of config.edges) {
    for (const hostname of edge.hostnames) {
      if (hostname === "*") fallback = edge;
      else if (hostname.startsWith("*.")) wildcards.push([hostname.slice(1), edge]);
      else exact.set(hostname, edge);
    }
  }
  wildcards.sort((a, b) => b[0].length - a[0].length);
  const routesByEdge = new Map(config.edges.map((edge) => [edge.id, [...edge.routes].sort((a, b) => b.match.length - a.match.length)]));
  const edgesById = new Map(config.edges.map((edge) => [edge.id, edge]));

  return {
    match(hostname, path) {
      const host = hostname.toLowerCase();
      const edge = exact.get(host) ?? wildcards.find(([suffix]) => host.endsWith(suffix))?.[1] ?? fallback;
      if (!edge) return undefined;
      return routesByEdge.get(edge.id)!.find((route) => prefixMatches(route.match, path));
    },
    edge: (edgeId) => edgesById.get(edgeId),
  };
}
