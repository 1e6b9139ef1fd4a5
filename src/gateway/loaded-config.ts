/**
 * The gateway config of this isolate, from the files bundled at build time: gateway.yaml checked on the first
 * request, each route's policy compiled when the route first serves (the build has checked them all).
 */

import { policyFiles } from "../generated/policy-files.ts";
import type { ServiceError } from "../errors.ts";
import { loadGatewayConfig, type GatewayConfig } from "./gateway-config.ts";
import { policyLoadError, policyLoadLogLine } from "./policy-error.ts";
import { buildRouteTable, type RouteTable } from "./route-table.ts";

export interface LoadedGateway {
  readonly config: GatewayConfig;
  readonly routes: RouteTable;
}

export type Loaded = { ok: true; gateway: LoadedGateway } | { ok: false; error: ServiceError };

/** An isolate's gateway: loaded on first use, again only when the tunnel domain (the one setting it reads) changes. */
export class LoadedGatewayMemory {
  private loaded: { tunnelDomain: string; result: Loaded } | undefined;

  /** The gateway, or the error that explains why the committed gateway.yaml does not load. */
  of(tunnelDomain: string): Loaded {
    if (this.loaded?.tunnelDomain !== tunnelDomain) this.loaded = { tunnelDomain, result: load(tunnelDomain) };
    return this.loaded.result;
  }
}

function load(tunnelDomain: string): Loaded {
  const result = loadGatewayConfig(policyFiles, {
    tunnelDomain,
    policies: "on-first-use",
    onPolicyIssues: (issues) => console.error(policyLoadLogLine(issues)),
  });
  if (result.ok) return { ok: true, gateway: { config: result.config, routes: buildRouteTable(result.config) } };
  console.error(policyLoadLogLine(result.issues));
  return { ok: false, error: policyLoadError("The gateway's policies do not load", result.issues) };
}
