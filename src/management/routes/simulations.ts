/**
 * `POST /traffic_policy_simulations`: runs a candidate traffic policy (its text, not deployed) over a list of
 * requests with src/policy/simulate/, against fresh buckets in memory, and answers each request's decision.
 * Nothing is stored and no real bucket, upstream or network is touched, so there is no resource to read back.
 */

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { formatIssue, formatPath } from "../../policy/issues.ts";
import {
  MAX_SIMULATED_HEADERS,
  MAX_SIMULATED_POLICY_CHARS,
  MAX_SIMULATED_REQUESTS,
  simulatePolicy,
  simulationInputSchema,
} from "../../policy/simulate/index.ts";
import { readJsonObject, validate } from "../body.ts";
import type { ManagementEnv } from "../context.ts";
import { text } from "../text.ts";
import { errorResponses, operation } from "../operation.ts";

/** Issues the message lists; `details.issues` has them all. */
const MAX_ISSUES_IN_MESSAGE = 5;

const json = <S extends z.ZodType>(schema: S) => ({ content: { "application/json": { schema } } });

const headersDoc = z
  .record(text(), z.union([text(), z.array(text())]))
  .openapi({ description: `Header name → value or list of values; at most ${MAX_SIMULATED_HEADERS} fields and 32 KiB of names and values.` });

/** What the document says of the body; the handler validates with `simulationInputSchema`, which has the same fields. */
const simulationCreate = z
  .object({
    policy: text().openapi({
      description: `The candidate policy's text, YAML or JSON (at most ${MAX_SIMULATED_POLICY_CHARS} characters; then the bounds of any policy).`,
      example: "inbound:\n  - actions:\n      - type: rate-limit\n        config: { name: per-client, capacity: 2, rate: 60s }\n",
    }),
    origin: z.enum(["tenant", "operator"]).optional().openapi({ description: "Checked as a tunnel's policy (tenant, default) or a route's (operator)." }),
    start: text().optional().openapi({ description: "RFC 3339 time of `at_ms` 0 (calendar windows count from it); default now." }),
    requests: z
      .array(
        z.object({
          method: text().openapi({ example: "GET" }),
          url: text().openapi({ example: "https://api.example.com/items?page=2" }),
          headers: headersDoc.optional(),
          client_ip: text().optional().openapi({ example: "203.0.113.7" }),
          at_ms: z.int().optional().openapi({ description: "Milliseconds after the first request's time; never decreasing. Default 0." }),
          response: z
            .object({ status: z.int(), headers: headersDoc.optional(), body: text().optional() })
            .optional()
            .openapi({ description: "The upstream's answer, for the response phase and settle_cost; absent: the request stops at the upstream." }),
        }),
      )
      .openapi({ description: `1 … ${MAX_SIMULATED_REQUESTS} requests, run in order.` }),
  })
  .openapi("TrafficPolicySimulationCreate");

const actionTrace = z
  .object({
    phase: z.enum(["inbound", "outbound"]),
    entry: z.int(),
    action: z.int(),
    type: z.string(),
    outcome: z.enum(["allowed", "limited", "shadow_limited", "shadow_denied", "denied", "answered", "continued", "error", "not_simulated"]),
    status: z.int().optional(),
    rate_limit: z
      .object({ name: z.string(), bucket_key: z.string(), remaining: z.int(), retry_after: z.int(), capacity: z.int(), window_s: z.number() })
      .optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    note: z.string().optional(),
  })
  .openapi("SimulatedAction");

const simulation = z
  .object({
    decisions: z.array(
      z.object({
        index: z.int(),
        matched: z.array(z.object({ phase: z.enum(["inbound", "outbound"]), entry: z.int(), name: z.string().optional() })),
        actions: z.array(actionTrace),
        expression_errors: z.array(z.object({ phase: z.enum(["inbound", "outbound"]), entry: z.int(), expression: z.string(), message: z.string() })),
        status: z.int().nullable().openapi({ description: "What the client would get; null: passed to the upstream, no response given." }),
        answered_by: z.enum(["inbound", "upstream", "outbound"]),
        headers: z.record(z.string(), z.string()).openapi({ description: "retry-after, ratelimit and ratelimit-policy of the answer." }),
      }),
    ),
    stopped: z.object({ at: z.int(), reason: z.string() }).nullable().openapi({ description: "Requests not run: the simulation's work bounds were reached." }),
    buckets: z.int().openapi({ description: "Buckets the simulation counted in (in memory, discarded)." }),
  })
  .openapi("TrafficPolicySimulation");

export const simulationsRouter = new OpenAPIHono<ManagementEnv>();

operation(
  simulationsRouter,
  createRoute({
    method: "post",
    path: "/traffic_policy_simulations",
    summary: "Simulate a candidate traffic policy over a list of requests",
    description:
      "Runs the policy through the gateway's engine against fresh in-memory buckets; no real bucket changes. A policy that does not load is a 400 whose details list each issue located as `npm run policy:check` prints it (`policy:<line>: <path>: <message>`).",
    tags: ["Traffic policy simulations"],
    request: { body: { required: true, ...json(simulationCreate) } },
    responses: { 200: { description: "Each request's decision, in order.", ...json(simulation) }, ...errorResponses(415) },
  }),
  async (c) => {
    const body = await readJsonObject(c);
    // The fields first, in this API's words (unknown field, the first bad value, text that is not well-formed
    // Unicode, as every field of this API); then the policy.
    validate(simulationInputSchema, body);
    validate(simulationCreate, body);
    const result = await simulatePolicy(body);
    if (!result.ok) {
      const issues = result.issues.map((issue) => ({
        line: issue.line ?? null,
        path: formatPath(issue.path),
        message: issue.message,
        text: formatIssue(issue),
      }));
      if (result.source === "input") {
        const field = issues[0]?.path ?? "";
        throw new ServiceError(400, ErrorCode.invalidValue, `The field '${field}' ${issues[0]?.message ?? "is not valid"}.`, { details: { field } });
      }
      const shown = issues.slice(0, MAX_ISSUES_IN_MESSAGE).map((issue) => issue.text);
      const more = issues.length > shown.length ? `; and ${issues.length - shown.length} more (details.issues)` : "";
      throw new ServiceError(400, ErrorCode.invalidValue, `The field 'policy' does not load: ${shown.join("; ")}${more}`, {
        details: {
          field: "policy",
          issues,
        },
      });
    }
    return c.json({ decisions: result.decisions, stopped: result.stopped ?? null, buckets: result.buckets }, 200);
  },
);
