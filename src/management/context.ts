/** The Hono environment of the management API: bindings and the per-request values middleware sets. */

import type { Context } from "hono";
import type { Env } from "../env.ts";

/**
 * The edges of policies/gateway.yaml as the management API needs them. worker.ts supplies them from the
 * gateway's config, so management does not depend on the gateway layer.
 */
export interface EdgeDirectory {
  /** The edge `edgeId` as deployment `env` configures it; throws the config's error when the policies do not load. */
  edge(env: Env, edgeId: string): DirectoryEdge | undefined;
  /** Every edge, in the order of policies/gateway.yaml; throws like `edge`. */
  edges(env: Env): readonly DirectoryEdge[];
}

/** An edge of policies/gateway.yaml: what the read-only `/edges/https` shows of it. */
export interface DirectoryEdge {
  readonly id: string;
  /** Host names as configured: exact, `*.suffix`, or `*`. */
  readonly hostnames: readonly string[];
  /** Each route matches a path prefix. */
  readonly routes: readonly { readonly id: string; readonly match: string }[];
}

/**
 * The online tunnels of each account, as worker.ts supplies them from the tunnel registry, so the management
 * layer imports no tunnel code for them.
 */
export interface TunnelDirectory {
  /** True when tunnel `tunnelId` is online, belongs to `accountId` and has an endpoint (a policy of its own; one registry call). */
  isOnline(env: Env, accountId: string, tunnelId: string): Promise<boolean>;
}

export interface ManagementVariables {
  /** `op_…`: names this request in logs, in the `x-operation-id` header and in error details. */
  operationId: string;
  /** The account of the API key that authenticated the request. */
  accountId: string;
  /** The edges of policies/gateway.yaml, as worker.ts supplies them to the app. */
  edges: EdgeDirectory;
  /** The accounts' online tunnels, as worker.ts supplies them; absent: no tunnel can be named (rate-limit overrides). */
  tunnels?: TunnelDirectory;
}

export interface ManagementEnv {
  Bindings: Env;
  Variables: ManagementVariables;
}

export type ManagementContext = Context<ManagementEnv>;

/** `https://host` of the request; `uri` fields are absolute URLs on it. */
export function requestOrigin(c: ManagementContext): string {
  return new URL(c.req.url).origin;
}
