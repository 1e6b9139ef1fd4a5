/**
 * `GET /edges/https/{edge_id}/routes/{id}/rate_limit_buckets` and `GET /tunnels/{id}/rate_limit_buckets`: one
 * bucket of a route's or an online tunnel's `rate-limit` action read back without counting anything: each window's capacity, what is used, what remains and when more becomes
 * available, as the limiter's object holds it (src/limiter/bucket-readback.ts) under the limits that apply now
 * (an override of the bucket, else the action's own).
 */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { Env } from "../../env.ts";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { isId } from "../../ids.ts";
import { bucketId } from "../../limiter/bucket-id.ts";
import type { WindowReading } from "../../limiter/bucket-readback.ts";
import { shardName } from "../../limiter/bucket-shards.ts";
import { OverrideIndex } from "../../limiter/override-match.ts";
import type { ActionLimits } from "../../policy/actions/rate-limit-plan.ts";
import { MAX_KEY_ELEMENT_CHARS } from "../../policy/actions/rate-limit-key.ts";
import { accountStore } from "../account-store.ts";
import { validate } from "../body.ts";
import { requestOrigin, type ManagementContext, type ManagementEnv } from "../context.ts";
import { findEdgeRoute } from "../edge-routes.ts";
import { errorResponses, operation } from "../operation.ts";
import { text } from "../text.ts";

/** What the read-back needs from the gateway; worker.ts supplies it. */
export interface RateLimitDirectory {
  /** The rate-limit action named `action` of a route of policies/gateway.yaml. */
  action(env: Env, edgeId: string, routeId: string, action: string): ActionLimits | undefined;
  /**
   * The rate-limit action named `action` of tunnel `tunnelId`'s traffic policy when that tunnel is online in
   * `accountId` (null: it is not, or not that account's; undefined: it has no such action).
   */
  tunnelAction(env: Env, accountId: string, tunnelId: string, action: string): Promise<ActionLimits | null | undefined>;
  /**
   * The ingress instance counting this call's buckets, as the gateway named it for the request that brought the
   * call (the request handed to the API is a copy without `request.cf`).
   */
  ingress(env: Env, request: Request): string;
}

const routeParams = z.object({
  edge_id: text().openapi({ param: { name: "edge_id", in: "path" }, description: "Edge id from policies/gateway.yaml." }),
  id: text().openapi({ param: { name: "id", in: "path" }, description: "Route id of that edge." }),
});

const tunnelParams = z.object({
  id: text().openapi({ param: { name: "id", in: "path" }, description: "An online tunnel of this account (its id in /tunnels)." }),
});

const querySchema = z.object({
  action: text({ length: { min: 1, max: 1_023 } }).openapi({ description: "The `name` of the rate-limit action." }),
  bucket_key: text({ length: { min: 0, max: MAX_KEY_ELEMENT_CHARS } }).openapi({
    description: "One value per element of the action's bucket_key, in order (repeat the parameter), as actions.svc.rate_limit.bucket_key shows each.",
  }),
  tier: z
    .string()
    .regex(/^[0-9]{1,2}$/, "must be a tier's position, 0 to 15")
    .optional()
    .openapi({ description: "Read under this tier's windows (0-based); default: the action's windows for requests no tier matches." }),
});

const windowSchema = z.object({
  window: z.string().openapi({ example: "60s", description: "The window as the action names it (its rate or period)." }),
  capacity: z.int(),
  used: z.int().openapi({ description: "Counted now, admissions leased to isolates included." }),
  remaining: z.int().openapi({ description: "At most this many more of cost 1 fit now (an upper bound while leases are out: see docs)." }),
  retry_after: z.int().openapi({ description: "Seconds until a request of cost 1 fits: 0 while remaining > 0." }),
  refill_after: z
    .int()
    .openapi({ description: "Seconds until the oldest counted cost leaves the window (the RateLimit field's t); 0 when nothing is counted." }),
  reset_after: z.int().openapi({ description: "Seconds until everything counted now has left the window." }),
});

const readingSchema = z
  .object({
    edge_id: z.string().optional(),
    route_id: z.string().optional(),
    tunnel_id: z.string().optional().openapi({ description: "Instead of edge_id and route_id, for a tunnel's bucket." }),
    action: z.string(),
    bucket_key: z.string().openapi({ description: "The elements joined with ':', as actions.svc.rate_limit.bucket_key shows them." }),
    ingress: z.string().nullable().openapi({ description: "The ingress instance whose count this is; null for scope: global." }),
    override: z.object({ id: z.string(), uri: z.string() }).nullable(),
    windows: z.array(windowSchema),
  })
  .openapi("RateLimitBucket");

const seconds = (ms: number) => Math.ceil(ms / 1000);

function notFound(message: string, details: Record<string, unknown>): ServiceError {
  return new ServiceError(404, ErrorCode.notFound, message, { details });
}

/** The query: the action's name, one `bucket_key` value per element, the tier (checked against the action later). */
function queryOf(c: ManagementContext): { action: string; parts: string[]; tier: string | undefined } {
  const parts = c.req.queries("bucket_key") ?? [];
  const query = validate(querySchema, { action: c.req.query("action"), bucket_key: parts[0], tier: c.req.query("tier") });
  for (const [index, part] of parts.entries()) validate(querySchema.shape.bucket_key, part, [`bucket_key[${index}]`]);
  return { action: query.action, parts, tier: query.tier };
}

/** Reads bucket `parts` of `limits` in `scope` under the override that matches it, if any, and answers it with `target`. */
async function readBucket(
  c: ManagementContext,
  directory: RateLimitDirectory,
  scope: string,
  target: Record<string, string>,
  limits: ActionLimits,
  { parts, tier: askedTier }: { parts: string[]; tier: string | undefined },
) {
  if (parts.length !== limits.keyElements) {
    const message = `must be given ${limits.keyElements} time(s), once per element of the action's bucket_key (got ${parts.length})`;
    throw new ServiceError(400, ErrorCode.invalidValue, `The field 'bucket_key' ${message}.`, { details: { field: "bucket_key" } });
  }
  const tiers = limits.plans.length;
  const tier = askedTier === undefined ? tiers - 1 : Number(askedTier);
  if (tier >= tiers) {
    throw new ServiceError(400, ErrorCode.invalidValue, `The field 'tier' must be 0 to ${tiers - 1} for this action.`, { details: { field: "tier" } });
  }
  const shown = parts.join(":");
  const now = Date.now();
  const override = new OverrideIndex(await accountStore(c.env, c.get("accountId")).liveOverrides()).match(scope, limits.name, shown, now);
  const plan = limits.plans[tier]!;
  const rules = override ? override.windows : plan.rules;
  const labels = override ? override.labels : plan.windows.map((window) => window.label);
  const ingress = limits.global ? null : directory.ingress(c.env, c.req.raw);
  const name = { ingress, scope, action: limits.name, key: JSON.stringify(parts) };
  const id = await bucketId(name);
  const store = c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(shardName(name, id)));
  const answer = (await store.readAll([{ id, windows: rules }], now)) as WindowReading[][] | { refused: string };
  if (!Array.isArray(answer)) throw new Error(`the limiter refused the read: ${answer.refused}`);
  return c.json(
    {
      ...target,
      action: limits.name,
      bucket_key: shown,
      ingress,
      override: override ? { id: override.id, uri: `${requestOrigin(c)}/rate_limit_overrides/${override.id}` } : null,
      windows: answer[0]!.map((reading, index) => ({
        window: labels[index] ?? "",
        capacity: reading.capacity,
        used: reading.used,
        remaining: reading.remaining,
        retry_after: seconds(reading.retryAfterMs),
        refill_after: seconds(reading.refillMs),
        reset_after: seconds(reading.resetMs),
      })),
    },
    200,
  );
}

const readingResponses = {
  200: { description: "The bucket's windows now.", content: { "application/json": { schema: readingSchema } } },
  ...errorResponses(404),
};

/** The read-back router; `directory` finds a route's or a tunnel's rate-limit action (worker.ts wires it). */
export function rateLimitBucketsRouter(directory: RateLimitDirectory): OpenAPIHono<ManagementEnv> {
  const router = new OpenAPIHono<ManagementEnv>();
  operation(
    router,
    createRoute({
      method: "get",
      path: "/edges/https/{edge_id}/routes/{id}/rate_limit_buckets",
      summary: "Read one bucket of a route's rate-limit action back, counting nothing",
      tags: ["Rate-limit overrides"],
      request: { params: routeParams, query: querySchema },
      responses: readingResponses,
    }),
    async (c) => {
      const edgeId = c.req.param("edge_id") ?? "";
      const routeId = c.req.param("id") ?? "";
      findEdgeRoute(c.get("edges"), c.env, c.get("accountId"), edgeId, routeId);
      const query = queryOf(c);
      const limits = directory.action(c.env, edgeId, routeId, query.action);
      if (!limits) {
        throw notFound(`The route '${routeId}' of edge '${edgeId}' has no rate-limit action named '${query.action.slice(0, 100)}'.`, {
          edge_id: edgeId,
          route_id: routeId,
          action: query.action.slice(0, 100),
        });
      }
      return readBucket(c, directory, `route:${edgeId}/${routeId}`, { edge_id: edgeId, route_id: routeId }, limits, query);
    },
  );
  operation(
    router,
    createRoute({
      method: "get",
      path: "/tunnels/{id}/rate_limit_buckets",
      summary: "Read one bucket of an online tunnel's rate-limit action back, counting nothing",
      tags: ["Rate-limit overrides"],
      request: { params: tunnelParams, query: querySchema },
      responses: readingResponses,
    }),
    async (c) => {
      const tunnelId = c.req.param("id") ?? "";
      const query = queryOf(c);
      // a malformed id names no tunnel: no registry call for it
      const limits = isId(tunnelId, "tn") ? await directory.tunnelAction(c.env, c.get("accountId"), tunnelId, query.action) : null;
      if (limits === null) throw notFound(`No online tunnel '${tunnelId.slice(0, 100)}' exists in this account.`, { id: tunnelId.slice(0, 100) });
      if (!limits) {
        throw notFound(`The tunnel '${tunnelId}' has no rate-limit action named '${query.action.slice(0, 100)}'.`, {
          id: tunnelId,
          action: query.action.slice(0, 100),
        });
      }
      return readBucket(c, directory, `tunnel:${tunnelId}`, { tunnel_id: tunnelId }, limits, query);
    },
  );
  return router;
}
