/** The gateway config of this isolate: compiled once from the files bundled at build time. */

import { policyFiles } from "../generated/policy-files.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import { formatIssue } from "../policy/issues.ts";
import { loadGatewayConfig, type GatewayConfig } from "./gateway-config.ts";
import { buildRouteTable, type RouteTable } from "./route-table.ts";

export interface LoadedGateway {
  readonly config: GatewayConfig;
  readonly routes: RouteTable;
}

type Loaded = { ok: true; gateway: LoadedGateway } | { ok: false; error: ServiceError };

let loaded: { tunnelDomain: string; result: Loaded } | undefined;

/** The compiled gateway, or the error that explains why the committed policies do not load. */
export function loadedGateway(tunnelDomain: string): Loaded {
  if (loaded?.tunnelDomain !== tunnelDomain) loaded = { tunnelDomain, result: load(tunnelDomain) };
  return loaded.result;
}

function load(tunnelDomain: string): Loaded {
  const result = loadGatewayConfig(policyFiles, { tunnelDomain });
  if (result.ok) return { ok: true, gateway: { config: result.config, routes: buildRouteTable(result.config) } };
  const messages = result.issues.map(formatIssue);
  console.error(`Tollgate: the policies do not load:\n${messages.join("\n")}`);
  return { ok: false, error: new ServiceError(500, ErrorCode.internal, `The gateway's policies do not load: ${messages.join("; ")}`, { issues: messages }) };
}
