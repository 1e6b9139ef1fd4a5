/** The local agent, put together: edge session, forwarder, tunnels and the agent API. */

import type { Hono } from "hono";
import { createAgentApi } from "./api/app.ts";
import { requestRoutes } from "./api/request-routes.ts";
import { simulateRoutes } from "./api/simulate-routes.ts";
import { showEdgeDecision } from "./edge/edge-decided.ts";
import { CaptureStore } from "./capture/capture-store.ts";
import { inspectorRoutes } from "./inspector/inspector-routes.ts";
import { splitHostPort, startApiServer, type ApiServer } from "./api/server.ts";
import type { BackoffOptions } from "./edge/backoff.ts";
import { EdgeSession } from "./edge/edge-session.ts";
import { LocalForwarder } from "./edge/local-forwarder.ts";
import { inspectDbBytes, type AgentConfig, type TunnelDefinition } from "./settings/schema.ts";
import { TunnelManager, type Tunnel } from "./tunnels/tunnel-manager.ts";
import { AGENT_VERSION } from "./version.ts";

export interface AgentOptions {
  readonly config: AgentConfig;
  /** Tunnels to open once the session is online. */
  readonly tunnels?: ReadonlyArray<{ name: string; definition: TunnelDefinition }>;
  /** Routes to add to the agent API (request capture, inspector). */
  readonly apiMounts?: ReadonlyArray<(app: Hono) => void>;
  readonly backoff?: BackoffOptions;
  readonly connectTimeoutMs?: number;
  readonly responseTimeoutMs?: number;
}

export interface Agent {
  readonly version: string;
  readonly config: AgentConfig;
  readonly session: EdgeSession;
  readonly tunnels: TunnelManager;
  readonly forwarder: LocalForwarder;
  /** Captured requests of `inspect: true` tunnels (none when web_addr is false: nothing could read them). */
  readonly capture: CaptureStore | undefined;
  /** The agent API's base URL, when web_addr is not false. */
  readonly apiUrl: string | undefined;
  /** Settles once the session is online and the start-up tunnels are open; rejects on a refusal. */
  readonly ready: Promise<Tunnel[]>;
  /** Stops the tunnels, closes the session and the agent API. */
  stop(): Promise<void>;
}

export async function startAgent(options: AgentOptions): Promise<Agent> {
  const { config } = options;
  let tunnels!: TunnelManager;
  const forwarder: LocalForwarder = new LocalForwarder({
    send: (frame) => session.send(frame),
    sendEncoded: (encoded) => session.sendEncoded(encoded),
    maxDataChunk: () => session.maxDataChunk,
    bodyChannel: () => session.bodyChannel,
    lookup: (tunnelId) => tunnels.lookup(tunnelId),
    sessionKey: () => session.status.sessionId ?? "offline",
    connectTimeoutMs: options.connectTimeoutMs,
    responseTimeoutMs: options.responseTimeoutMs,
  });
  const session: EdgeSession = new EdgeSession({
    serverAddr: config.server_addr,
    apiKey: config.api_key,
    agentVersion: AGENT_VERSION,
    metadata: config.metadata,
    backoff: options.backoff,
    onStreamFrame: (frame) => forwarder.onFrame(frame),
    onBatchEnd: () => forwarder.endBatch(),
    onDisconnect: (reason) => {
      forwarder.abortAll(reason);
      tunnels.disconnected(reason);
    },
    onTunnelStopped: (tunnelId, reason) => tunnels.stoppedByEdge(tunnelId, reason),
    onEdgeDecision: (decision) => {
      const tunnel = tunnels.lookup(decision.tunnel_id);
      if (tunnel) showEdgeDecision(decision, tunnel, session.status.sessionId ?? "offline");
    },
  });
  tunnels = new TunnelManager({ session, metadata: config.metadata });

  let api: ApiServer | undefined;
  let capture: CaptureStore | undefined;
  if (config.web_addr !== false) {
    capture = new CaptureStore({ maxBytes: inspectDbBytes(config) });
    tunnels.addTap(capture.tap);
    const app = createAgentApi(
      { version: AGENT_VERSION, serverAddr: config.server_addr, requestedRegion: config.region, session, tunnels },
      {
        allowHosts: config.web_allow_hosts,
        listenHost: splitHostPort(config.web_addr).host,
        mounts: [requestRoutes({ capture, tunnels }), simulateRoutes({ capture }), inspectorRoutes(), ...(options.apiMounts ?? [])],
      },
    );
    api = await startApiServer(app, config.web_addr);
  }

  // Start-up tunnels are known (and shown) at once, and open as soon as the session is online.
  const wanted = await Promise.all((options.tunnels ?? []).map(({ name, definition }) => tunnels.start(name, definition, { whenOnline: true })));
  session.start();
  const ready = (async () => {
    await session.waitOnline();
    const settled = await Promise.all(wanted.map((tunnel) => tunnels.settled(tunnel)));
    const failed = settled.find((tunnel) => tunnel.state === "failed");
    if (failed) throw new Error(`tunnel '${failed.name}' did not start: ${failed.error}`);
    return settled;
  })();
  ready.catch(() => undefined); // the caller decides; an unobserved rejection must not crash the process

  let stopping: Promise<void> | undefined;
  return {
    version: AGENT_VERSION,
    config,
    session,
    tunnels,
    forwarder,
    capture,
    apiUrl: api?.url,
    ready,
    stop: () =>
      (stopping ??= (async () => {
        await tunnels.stopAll();
        await session.close();
        await api?.close();
      })()),
  };
}
