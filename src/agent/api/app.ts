/**
 * The agent API (Hono): `/api/` index, `/api/status`, `/api/tunnels`; more resources (request capture,
 * the inspector page) mount through `mounts`. Every request passes the Host check first.
 */

import { Hono } from "hono";
import type { EdgeSession } from "../edge/edge-session.ts";
import type { TunnelManager } from "../tunnels/tunnel-manager.ts";
import { AgentApiError, AgentErrorCode } from "./errors.ts";
import { hostCheck } from "./host-check.ts";
import { tunnelRoutes } from "./tunnel-routes.ts";

/** What the API reads of the running agent. */
export interface AgentApiContext {
  readonly version: string;
  readonly serverAddr: string;
  /** `--region` / `region:` as given: recorded, not acted on (the edge decides where traffic enters). */
  readonly requestedRegion?: string;
  readonly session: EdgeSession;
  readonly tunnels: TunnelManager;
}

export interface AgentApiOptions {
  readonly allowHosts?: readonly string[];
  readonly listenHost?: string;
  /** Adds routes (e.g. `/api/requests/http`) before the API's 404. */
  readonly mounts?: ReadonlyArray<(app: Hono) => void>;
}

export function createAgentApi(agent: AgentApiContext, options: AgentApiOptions = {}): Hono {
  const app = new Hono();
  app.use("*", hostCheck({ allowHosts: options.allowHosts, listenHost: options.listenHost }));

  const index = () =>
    Response.json({
      uri: "/api/",
      resources: {
        tunnels: { uri: "/api/tunnels", methods: ["GET", "POST"] },
        tunnel: { uri: "/api/tunnels/{name}", methods: ["GET", "DELETE"] },
        status: { uri: "/api/status", methods: ["GET"] },
        ...(options.mounts?.length ? { requests: { uri: "/api/requests/http", methods: ["GET", "POST", "DELETE"] } } : {}),
      },
    });
  app.get("/api", index);
  app.get("/api/", index);
  app.get("/api/status", (c) => {
    const status = agent.session.status;
    return c.json({
      uri: "/api/status",
      status: status.state,
      agent_version: agent.version,
      session: {
        id: status.sessionId ?? null,
        server_addr: agent.serverAddr,
        region: status.region ?? null,
        requested_region: agent.requestedRegion ?? null,
        latency_ms: status.latencyMs ?? null,
        connected_at: status.connectedAt?.toISOString() ?? null,
        reconnects: status.reconnects,
        last_error: status.lastError ?? null,
      },
      tunnels: agent.tunnels.list().length,
    });
  });
  app.route("/api/tunnels", tunnelRoutes(agent.tunnels, agent.session));
  for (const mount of options.mounts ?? []) mount(app);

  app.notFound((c) => new AgentApiError(404, AgentErrorCode.notFound, `no resource at ${c.req.path}`).render(c));
  app.onError((error, c) => {
    if (error instanceof AgentApiError) return error.render(c);
    console.error("tollgate agent API:", error);
    return new AgentApiError(500, AgentErrorCode.internal, "internal error of the agent API", String((error as Error).message ?? error)).render(c);
  });
  return app;
}
