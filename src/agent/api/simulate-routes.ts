/**
 * `POST /api/simulate`: runs a candidate traffic policy over captured requests, in the agent itself (it needs no
 * API key and reaches no edge), and answers, next to each request, what the candidate would have done and what
 * changed compared with what really happened. The inspector's simulation view calls it.
 */

import type { Hono } from "hono";
import { z } from "zod";
import type { CaptureStore } from "../capture/capture-store.ts";
import type { CapturedExchange } from "../capture/captured-exchange.ts";
import { formatIssue } from "../../policy/issues.ts";
import { MAX_SIMULATED_POLICY_CHARS, MAX_SIMULATED_REQUESTS, type SimulatedDecision, simulatePolicy } from "../../policy/simulate/index.ts";
import { AgentApiError, AgentErrorCode } from "./errors.ts";
import { readJsonBody } from "./json-body.ts";
import { capturesAsRequests } from "./simulation-requests.ts";

const simulateSchema = z.strictObject({
  policy: z
    .string({ error: "must be the policy's text (YAML or JSON)" })
    .max(MAX_SIMULATED_POLICY_CHARS, `must be at most ${MAX_SIMULATED_POLICY_CHARS} characters`),
  ids: z
    .array(z.string().max(64, "is not a captured request id"), { error: "must be a list of captured request ids" })
    .min(1, "must name at least 1 captured request")
    .max(MAX_SIMULATED_REQUESTS, `exceeds the limit of ${MAX_SIMULATED_REQUESTS} requests per simulation`),
});

/** How the candidate's answer differs from what really happened. */
export type Change = "same" | "newly_limited" | "newly_denied" | "newly_allowed" | "changed" | "not_run";

const REFUSALS = new Set([401, 403, 429]);

export function changeOf(actual: number | null, decision: SimulatedDecision | undefined): Change {
  if (!decision) return "not_run";
  // Passed on to a local service that never answered: it would have failed the same way.
  const candidate = decision.status ?? actual;
  if (candidate === actual) return "same";
  if (candidate === 429) return "newly_limited";
  if (candidate === 401 || candidate === 403) return "newly_denied";
  if (actual !== null && REFUSALS.has(actual) && decision.answered_by !== "inbound") return "newly_allowed";
  return "changed";
}

function actualOf(exchange: CapturedExchange): { status_code: number | null; state: string } {
  return { status_code: exchange.response?.statusCode ?? null, state: exchange.state };
}

/** Mounts the route on the agent API (pass to `createAgentApi`'s `mounts`). */
export function simulateRoutes({ capture }: { readonly capture: CaptureStore }): (app: Hono) => void {
  return (app) => {
    app.post("/api/simulate", async (c) => {
      const parsed = simulateSchema.safeParse(await readJsonBody(c.req.raw, AgentErrorCode.badRequest, "invalid simulation"));
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const detail = issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
        throw new AgentApiError(400, AgentErrorCode.badRequest, `invalid simulation: ${detail}`, detail);
      }
      const { policy, ids } = parsed.data;
      const found = [...new Set(ids)].map((id) => capture.get(id)).filter((exchange) => exchange !== undefined);
      // Evicted since the page listed them: said, not an error.
      const missing = ids.filter((id) => !capture.get(id));
      if (found.length === 0) throw new AgentApiError(404, AgentErrorCode.notFound, "none of these captured requests exists any more", missing.join(", "));
      const { start, ordered, requests } = capturesAsRequests(found);
      const result = await simulatePolicy({ policy, start, requests });
      if (!result.ok) {
        const messages = result.issues.map((issue) => {
          const index = issue.path[0] === "requests" && typeof issue.path[1] === "number" ? issue.path[1] : undefined;
          return index !== undefined ? `captured request ${ordered[index]?.id}: ${formatIssue({ ...issue, path: issue.path.slice(2) })}` : formatIssue(issue);
        });
        const what = result.source === "policy" ? "the policy does not load" : "these requests cannot be simulated";
        throw new AgentApiError(400, AgentErrorCode.badRequest, `${what}: ${messages.slice(0, 5).join("; ")}`, messages.join("\n"));
      }
      return c.json({
        uri: "/api/simulate",
        results: ordered.map((exchange, index) => {
          const decision = result.decisions[index];
          const actual = actualOf(exchange);
          return {
            id: exchange.id,
            tunnel_name: exchange.tunnelName,
            method: exchange.request.method,
            uri: exchange.request.target,
            actual,
            simulated: decision ?? null,
            change: changeOf(actual.status_code, decision),
          };
        }),
        missing,
        stopped: result.stopped ?? null,
      });
    });
    app.all("/api/simulate", () => {
      throw new AgentApiError(405, AgentErrorCode.methodNotAllowed, "method not allowed here; use POST");
    });
  };
}
