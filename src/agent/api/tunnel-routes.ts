/** /api/tunnels: list, start (a tunnel definition as JSON), detail, stop — the shapes of ngrok's agent API. */

import { Hono } from "hono";
import { parseTunnelDefinition } from "../settings/load.ts";
import type { NamedTunnelDefinition } from "../settings/schema.ts";
import { EdgeRefusal } from "../edge/edge-session.ts";
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

const methodNotAllowed = (allowed: string) => () => {
  throw new AgentApiError(405, AgentErrorCode.methodNotAllowed, `method not allowed here; use ${allowed}`);
};

export function tunnelRoutes(tunnels: TunnelManager): Hono {
  return new Hono()
    .get("/", (c) => c.json({ tunnels: tunnels.list().map(tunnelView), uri: "/api/tunnels" }))
    .post("/", async (c) => {
      const body = await readJsonBody(c.req.raw, AgentErrorCode.invalidTunnelDefinition, "invalid tunnel definition");
      const parsed = parseTunnelDefinition(body);
      if (!parsed.ok) throw new AgentApiError(400, AgentErrorCode.invalidTunnelDefinition, "invalid tunnel definition", parsed.message);
      const { name, ...definition } = parsed.tunnel satisfies NamedTunnelDefinition;
      try {
        const tunnel = await tunnels.start(name, definition);
        return c.json(tunnelView(tunnel), 201);
      } catch (error) {
        if (error instanceof DuplicateTunnelError) throw new AgentApiError(409, AgentErrorCode.duplicateTunnel, error.message);
        if (error instanceof EdgeRefusal) throw new AgentApiError(502, AgentErrorCode.edgeRefused, `the edge did not start the tunnel: ${error.message}`, `${error.code}: ${error.message}`);
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
