/** The Hono environment of the management API: bindings and the per-request values middleware sets. */

import type { Context } from "hono";
import type { Env } from "../env.ts";
import type { EdgeDirectory } from "./edge-routes.ts";

export interface ManagementVariables {
  /** `op_…`: names this request in logs, in the `x-operation-id` header and in error details. */
  operationId: string;
  /** The account of the API key that authenticated the request. */
  accountId: string;
  /** The edges of policies/gateway.yaml, as worker.ts supplies them to the app. */
  edges: EdgeDirectory;
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
