/** /api/tunnels: list, start (a tunnel definition as JSON), detail, stop — the shapes of ngrok's agent API. */

import { Hono } from "hono";
import { parseTunnelDefinition } from "../settings/load.ts";
import type { NamedTunnelDefinition } from "../settings/schema.ts";
import { EdgeRefusal, type EdgeSession } from "../edge/edge-session.ts";
import { DuplicateTunnelError, type Tunnel, type TunnelManager } from "../tunnels/tunnel-manager.ts";
import type { TunnelMetricsSnapshot } from "../metrics/tunnel-metrics.ts";
import { AgentApiError, AgentErrorCode, notFound } from "./errors.ts";
import { readJsonBody } from "./json-body.ts";

export interface TunnelView {
  name: string;
  uri: string;
  public_url: string;
  proto: string;
  config: { addr: string; inspect: boolean };
  metrics: TunnelMetricsSnapshot;
  /** Additions to ngrok's shape: the edge's tunnel id and the tunnel's state. */
  id: string;
  state: string;
}

export function tunnelView(tunnel: Tunnel): TunnelView {
  return {
    name: tunnel.name,
    uri: `/api/tunnels/${encodeURIComponent(tunnel.name)}`,
    public_url: tunnel.publicUrl ?? "",
    proto: tunnel.proto,
    config: { addr: tunnel.addr, inspect: tunnel.inspect },
    metrics: tunnel.metrics.snapshot(),
    id: tunnel.id,
    state: tunnel.state,
  };
}

/**
 * Options the `ngrok` npm package sends along with every tunnel (it posts its whole options object): they
 * configure the client or the agent process, not the tunnel, so the tunnel definition leaves them out.
 * `authtoken` was already saved with `tollgate authtoken` before the agent started.
 */
const CLIENT_OPTIONS = ["authtoken", "configPath", "region", "binPath", "port", "host"] as const;

/** What the `ngrok` npm package and pyngrok retry on (503 with this exact `details.err`) until the session is up. */
export const SESSION_NOT_READY = "a successful ngrok tunnel session has not yet been established";

function withoutClientOptions(body: unknown): unknown {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return body;
  const copy = { ...(body as Record<string, unknown>) };
  for (const key of CLIENT_OPTIONS) delete copy[key];
  return copy;
}

const methodNotAllowed = (allowed: string) => () => {
  throw new AgentApiError(405, AgentErrorCode.methodNotAllowed, `method not allowed here; use ${allowed}`);
};

export function tunnelRoutes(tunnels: TunnelManager, session: Pick<EdgeSession, "status">): Hono {
  return new Hono()
    .get("/", (c) => c.json({ tunnels: tunnels.list().map(tunnelView), uri: "/api/tunnels" }))
    .post("/", async (c) => {
      const body = await readJsonBody(c.req.raw, AgentErrorCode.invalidTunnelDefinition, "invalid tunnel definition");
      const parsed = parseTunnelDefinition(withoutClientOptions(body));
      if (!parsed.ok) throw new AgentApiError(400, AgentErrorCode.invalidTunnelDefinition, "invalid tunnel definition", parsed.message);
      const { name, ...definition } = parsed.tunnel satisfies NamedTunnelDefinition;
      const state = session.status.state;
      if (state === "connecting" || state === "reconnecting") {
        throw new AgentApiError(
          503,
          AgentErrorCode.sessionNotReady,
          `the agent is not connected to the edge yet (${state}${session.status.lastError ? `: ${session.status.lastError}` : ""}); retry`,
          SESSION_NOT_READY,
        );
      }
      try {
        const tunnel = await tunnels.start(name, definition);
        return c.json(tunnelView(tunnel), 201);
      } catch (error) {
        if (error instanceof DuplicateTunnelError) throw new AgentApiError(409, AgentErrorCode.duplicateTunnel, error.message);
        if (error instanceof EdgeRefusal)
          throw new AgentApiError(502, AgentErrorCode.edgeRefused, `the edge did not start the tunnel: ${error.message}`, `${error.code}: ${error.message}`);
        throw error;
      }
    })
    .all("/", methodNotAllowed("GET or POST"))
    .get("/:name", (c) => {
      const tunnel = tunnels.get(c.req.param("name"));
      if (!tunnel) throw notFound(`tunnel '${c.req.param("name")}'`);
      return c.json(tunnelView(tunnel));
    })
    .delete("/:name", async (c) => {
      if (!(await tunnels.stop(c.req.param("name")))) throw notFound(`tunnel '${c.req.param("name")}'`);
      return c.body(null, 204);
    })
    .all("/:name", methodNotAllowed("GET or DELETE"));
}
