/**
 * What a rate-limit override names, as the bucket scope the gateway counts under: a route of an edge
 * (`route:<edge>/<route>`) or an online tunnel of the caller's account (`tunnel:<tunnel id>`, the id `/tunnels`
 * lists). A tunnel's buckets are named by its id, so an override of a tunnel applies to that tunnel only: an agent
 * that connects again gets a tunnel with a new id (and new buckets), which an override needs naming anew.
 */

import { z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { isId } from "../../ids.ts";
import type { Env } from "../../env.ts";
import type { EdgeDirectory, TunnelDirectory } from "../context.ts";
import { findEdgeRoute } from "../edge-routes.ts";
import { text } from "../text.ts";

/** Tunnel ids are `tn_` and a fixed-length body; anything else names no tunnel (404). */
const TUNNEL_ID_PREFIX = "tn";
/** Longest id field accepted before it is looked up (an id is far shorter; docs/security.md). */
export const MAX_TARGET_ID_LENGTH = 128;

const targetId = (description: string, example: string) =>
  text({ length: { min: 1, max: MAX_TARGET_ID_LENGTH } })
    .optional()
    .openapi({ description, example });

/** The target fields of a create body: `edge_id` and `route_id`, or `tunnel_id`. */
export const targetFields = {
  edge_id: targetId("Edge id from policies/gateway.yaml (with route_id).", "edghts_local"),
  route_id: targetId("Route id of that edge.", "edghtsrt_demo"),
  tunnel_id: targetId(
    "Instead of edge_id + route_id: an online tunnel of this account (its id in /tunnels); its policy's action.",
    "tn_2abcdefghijklmnopqrstuvwxyz",
  ),
};

/** The target as the API shows it; fields that do not apply are omitted. */
export const targetSchemaFields = {
  edge_id: z.string().optional(),
  route_id: z.string().optional(),
  tunnel_id: z.string().optional(),
};

export interface TargetBody {
  readonly edge_id?: string;
  readonly route_id?: string;
  readonly tunnel_id?: string;
}

function invalid(field: string, message: string): ServiceError {
  return new ServiceError(400, ErrorCode.invalidValue, `The field '${field}' ${message}.`, { details: { field } });
}

/**
 * The bucket scope `body` names once it is found to be the caller's: a route of an edge it owns, or an online
 * tunnel of its account (another account's tunnel is answered as no tunnel, 404).
 */
export async function scopeOfTarget(
  env: Env,
  accountId: string,
  edges: EdgeDirectory,
  tunnels: TunnelDirectory | undefined,
  body: TargetBody,
): Promise<string> {
  const { edge_id: edgeId, route_id: routeId, tunnel_id: tunnelId } = body;
  if (tunnelId !== undefined) {
    if (edgeId !== undefined || routeId !== undefined) throw invalid("tunnel_id", "cannot be combined with edge_id or route_id");
    const online = isId(tunnelId, TUNNEL_ID_PREFIX) && tunnels !== undefined && (await tunnels.isOnline(env, accountId, tunnelId));
    if (!online)
      throw new ServiceError(404, ErrorCode.notFound, `No online tunnel '${tunnelId}' exists in this account.`, { details: { tunnel_id: tunnelId } });
    return `tunnel:${tunnelId}`;
  }
  if (edgeId === undefined) throw invalid("edge_id", "is required (or give tunnel_id)");
  if (routeId === undefined) throw invalid("route_id", "is required with edge_id");
  findEdgeRoute(edges, env, accountId, edgeId, routeId);
  return `route:${edgeId}/${routeId}`;
}

/** The target fields of a stored scope. */
export function targetOfScope(scope: string): TargetBody {
  if (scope.startsWith("tunnel:")) return { tunnel_id: scope.slice("tunnel:".length) };
  const label = scope.slice("route:".length);
  const slash = label.indexOf("/");
  return { edge_id: label.slice(0, slash), route_id: label.slice(slash + 1) };
}
