/**
 * TunnelSession: one Durable Object per agent session (`ts_…`), a thin shell. It holds the agent's WebSocket
 * through the hibernation API (heartbeats are answered without waking it) and hands everything else off:
 * frames of relayed streams to EdgeStreams and PublicSockets, the session's tunnels to SessionTunnels, what
 * must outlive hibernation to SessionStore, and the heartbeat deadline to session-liveness.ts.
 */

import { DurableObject } from "cloudflare:workers";
import { closeReason } from "../close-reason.ts";
import type { Env } from "../env.ts";
import { ServiceError } from "../errors.ts";
import { BODY_LENGTH_HEADER, BODY_PATH, bearerToken, newBodyToken, tokensMatch } from "./body-channel.ts";
import { settingsOf } from "../settings.ts";
import { EdgeStreams } from "./edge-streams.ts";
import { carriedDecisionsOf, DECISION_PATH, SessionDecisions } from "./session-decisions.ts";
import { refusedHeadDecision } from "./refused-head-decision.ts";
import { TunnelErrorCode } from "./errors.ts";
import { FrameOutbox } from "../relay/framing.ts";
import {
  BODY_CHANNEL_MAX_BYTES,
  CloseCode,
  decodeMessage,
  HEARTBEAT_PING,
  HEARTBEAT_PONG,
  LARGE_DATA_CHUNK,
  MAX_DATA_CHUNK,
  MAX_RESET_MESSAGE,
  ResetCode,
  type Frame,
  type UndecodableFrame,
} from "../relay/index.ts";
import { RefusalLog } from "../relay/refusal-log.ts";
import { PublicFailures } from "./public-failures.ts";
import { AGENT_TAG, PublicSockets } from "./public-sockets.ts";
import { firstCheck, liveness } from "./session-liveness.ts";
import { SessionStore, type SessionInfo, type SessionMeta } from "./session-store.ts";
import { SessionTunnels } from "./session-tunnels.ts";
import { CONNECT_PATH, OFFLINE_HEADER, RELAY_PATH, SESSION_INFO_HEADER } from "./session-paths.ts";
import { StreamIds } from "./stream-ids.ts";
import { MAX_SESSION_STREAMS } from "./stream-limits.ts";

export class TunnelSession extends DurableObject<Env> {
  private readonly store: SessionStore;
  private readonly streams: EdgeStreams;
  private readonly outbox: FrameOutbox;
  private readonly publicSockets: PublicSockets;
  private readonly tunnels: SessionTunnels;
  /** What public clients get when a request cannot be relayed: a page for a browser, JSON for the rest. */
  private readonly failures = new PublicFailures();
  private readonly decisions = new SessionDecisions();
  /** Request heads past the relay's bounds this session answered itself (431, 414, 501), logged at a bounded rate. */
  private readonly refusedHeads = new RefusalLog({ what: "request heads past the relay's bounds answered at the edge (not relayed)" });
  /** Stream frames from the agent that did not decode: each resets its stream, the session goes on. */
  private readonly undecodable = new RefusalLog({ what: "undecodable stream frames from the agent reset" });
  private lastFrameAt = 0;
  /** The agent's open socket, remembered between lookups (getWebSockets on every frame sent cost ~2 % of a relay's CPU). */
  private agentSocket: WebSocket | undefined;
  /** The agent's largest data frame body, remembered from the session's meta (read per request body otherwise). */
  private agentDataChunk: number | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(HEARTBEAT_PING, HEARTBEAT_PONG));
    this.store = new SessionStore(ctx.storage.kv);
    this.outbox = new FrameOutbox(
      (message) => this.write(message),
      (flush) => queueMicrotask(flush),
    );
    this.publicSockets = new PublicSockets(ctx, (frame) => this.send(frame));
    const ids = new StreamIds(this.store.streamIds, (id) => this.streams.has(id) || this.publicSockets.holds(id));
    this.streams = new EdgeStreams({
      send: (frame) => this.send(frame),
      sendEncoded: (encoded) => this.outbox.pushEncoded(encoded),
      allocateId: () => ids.allocate(),
      agentDataChunk: () => (this.agentDataChunk ??= this.store.meta()?.agentMaxDataChunk ?? MAX_DATA_CHUNK),
      failureResponse: (failure, host) => this.failures.streamFailed(failure, host),
      refuseHead: (refused, request) => {
        this.refusedHeads.refused(`${refused.status}: ${refused.reason}`);
        // The agent never sees the request: its inspector and log hear of it as an edge decision.
        this.decisions.offer(refusedHeadDecision(request, refused, Date.now()), this.store, (frame) => this.send(frame));
        return this.failures.headRefused(refused, request.host);
      },
      acceptWebSocket: (stream, request, headers) => this.publicSockets.accept(stream, request.tunnelId, headers),
      channelWaitMs: () => settingsOf(env).bodyChannelWaitMs,
    });
    this.tunnels = new SessionTunnels({
      env,
      store: this.store,
      send: (frame) => this.send(frame),
      connected: () => this.socket() !== undefined,
      disconnectTraffic: (tunnelId) => {
        this.streams.failTunnel(tunnelId, { code: ResetCode.unknownTunnel, message: "the tunnel was stopped" });
        this.publicSockets.close("the tunnel was stopped", tunnelId);
      },
    });
  }

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === CONNECT_PATH) return this.acceptAgent(request);
    if (url.pathname === RELAY_PATH) return this.relay(request, url);
    if (url.pathname === BODY_PATH) return this.acceptBody(request, url);
    if (url.pathname === DECISION_PATH) return this.decisions.receive(request, this.store, (frame) => this.send(frame));
    return new Response("unknown session path", { status: 404 });
  }

  /** RPC for TunnelHost: does this session serve the tunnel right now? */
  servesTunnel(tunnelId: string): boolean {
    return this.socket() !== undefined && this.store.tunnel(tunnelId) !== undefined;
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // the agent's socket is known without asking for its tags (getTags per message cost a download's time:
    // docs/benchmark.md#figures-behind-constants-in-the-code)
    if (ws !== this.agentSocket && this.publicSockets.isPublic(ws)) return this.publicSockets.fromClient(ws, message);
    this.lastFrameAt = Date.now();
    if (typeof message === "string") {
      if (message === HEARTBEAT_PING) ws.send(HEARTBEAT_PONG);
      else await this.protocolError(ws, "text messages other than heartbeats are not part of the protocol");
      return;
    }
    // data frames up to LARGE_DATA_CHUNK: welcome told the agent so (an older agent ignores it and sends less)
    const decoded = decodeMessage(message, LARGE_DATA_CHUNK);
    if (!decoded.ok) return this.protocolError(ws, decoded.error);
    // Stream frames are handled synchronously, in the order they came; only session frames (start and
    // stop, which call other objects) are awaited, after the batch's stream frames are dealt with.
    const sessionFrames: Frame[] = [];
    try {
      for (const frame of decoded.frames) {
        if (isSessionFrame(frame)) sessionFrames.push(frame);
        else this.onStreamFrame(ws, frame);
      }
      for (const frame of decoded.undecodable) this.onUndecodable(frame);
    } finally {
      this.streams.endBatch();
    }
    for (const frame of sessionFrames) await this.onSessionFrame(ws, frame);
  }

  private async onSessionFrame(ws: WebSocket, frame: Frame): Promise<void> {
    switch (frame.type) {
      case "hello": {
        const known = this.store.meta();
        if (!known) return;
        const meta: SessionMeta = { ...known, agentMaxDataChunk: frame.max_data_chunk ?? MAX_DATA_CHUNK, agentEdgeDecisions: frame.edge_decisions };
        this.store.saveMeta(meta);
        this.agentDataChunk = meta.agentMaxDataChunk;
        this.send({
          type: "welcome",
          session_id: meta.sessionId,
          region: meta.region,
          heartbeat_ms: meta.heartbeatMs,
          max_data_chunk: LARGE_DATA_CHUNK,
          ...(meta.bodyToken ? { body_channel: { object: this.ctx.id.toString(), token: meta.bodyToken, max_bytes: BODY_CHANNEL_MAX_BYTES } } : {}),
        });
        return this.tunnels.recordSession(meta, frame);
      }
      case "start_tunnel":
        return this.tunnels.start(frame);
      case "stop_tunnel":
        return this.tunnels.stop(frame);
      default:
        return this.protocolError(ws, `${frame.type} frames are sent by the edge, not by the agent`);
    }
  }

  private onStreamFrame(ws: WebSocket, frame: Frame): void {
    switch (frame.type) {
      case "response_head":
      case "data":
      case "end":
      case "window":
      case "reset":
        this.streams.onFrame(frame);
        return;
      case "ws_message":
      case "ws_close":
        this.publicSockets.fromAgent(frame);
        return;
      default:
        void this.protocolError(ws, `${frame.type} frames are sent by the edge, not by the agent`);
    }
  }

  /**
   * A stream frame of the agent's this end cannot decode: that stream fails (its client hears 502, a relayed
   * WebSocket closes 1002) and the agent is told with a reset; the session and its other streams go on.
   */
  private onUndecodable(frame: UndecodableFrame): void {
    this.undecodable.refused(frame.error);
    const failure = { code: ResetCode.protocolError, message: `the edge could not decode a ${frame.type} frame: ${frame.error}`.slice(0, MAX_RESET_MESSAGE) };
    if (this.streams.has(frame.stream)) this.streams.onFrame({ type: "reset", stream: frame.stream, ...failure });
    if (this.publicSockets.holds(frame.stream)) this.publicSockets.fromAgent({ type: "ws_close", stream: frame.stream, code: 1002, reason: "protocol error" });
    this.send({ type: "reset", stream: frame.stream, ...failure });
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    if (this.publicSockets.isPublic(ws)) return this.publicSockets.clientClosed(ws, code, reason);
    await this.endSession("the agent closed its session");
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    if (this.publicSockets.isPublic(ws)) return this.publicSockets.clientClosed(ws, 1006, "the public client's connection failed");
    await this.endSession("the agent's connection failed");
  }

  override async alarm(): Promise<void> {
    const meta = this.store.meta();
    if (!meta) return;
    const ws = this.socket();
    if (!ws) return this.endSession("the agent's connection is gone");
    const lastPing = this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
    const state = liveness({ lastPing, lastFrameAt: this.lastFrameAt, connectedAt: meta.connectedAt, heartbeatMs: meta.heartbeatMs, now: Date.now() });
    if (!state.alive) {
      closeQuietly(ws, CloseCode.heartbeatTimeout, "no heartbeat from the agent");
      return this.endSession("the agent stopped answering heartbeats");
    }
    // renews the session record too, so it is renewed whether or not the session has tunnels
    await this.tunnels.renew(meta);
    await this.ctx.storage.setAlarm(state.checkAgainAt);
  }

  private async acceptAgent(request: Request): Promise<Response> {
    const info = JSON.parse(request.headers.get(SESSION_INFO_HEADER) ?? "null") as SessionInfo | null;
    if (!info) return new Response("missing session info", { status: 400 });
    for (const old of this.ctx.getWebSockets(AGENT_TAG)) closeQuietly(old, CloseCode.sessionReplaced, "replaced by a new connection");
    this.agentSocket = undefined;
    this.agentDataChunk = undefined;
    const [client, server] = Object.values(new WebSocketPair());
    server.binaryType = "arraybuffer";
    this.ctx.acceptWebSocket(server, [AGENT_TAG]);
    const meta: SessionMeta = { ...info, connectedAt: Date.now(), bodyToken: newBodyToken() };
    this.store.saveMeta(meta);
    await this.ctx.storage.setAlarm(firstCheck(meta.connectedAt, meta.heartbeatMs));
    return new Response(null, { status: 101, webSocket: client });
  }

  private async relay(request: Request, url: URL): Promise<Response> {
    const tunnelId = url.searchParams.get("tunnel") ?? "";
    if (!this.socket() || !this.store.tunnel(tunnelId)) {
      await request.body?.cancel();
      return new Response(null, { status: 404, headers: { [OFFLINE_HEADER]: "1" } });
    }
    // Past the bound the agent is not asked: the client hears at once that the tunnel is busy.
    if (this.streams.inFlight >= MAX_SESSION_STREAMS) return this.failures.refuse(url.searchParams.get("host") ?? "", request);
    const opened = this.streams.open({
      tunnelId,
      method: request.method,
      target: url.searchParams.get("target") ?? "/",
      headers: request.headers,
      clientAddr: url.searchParams.get("client") ?? "",
      scheme: url.searchParams.get("scheme") ?? "http",
      host: url.searchParams.get("host") ?? "",
      body: request.body,
      upgrade: request.headers.get("upgrade")?.toLowerCase() === "websocket",
      decisions: carriedDecisionsOf(url),
    });
    return this.failures.forClient(await opened, request);
  }

  /** A body channel's POST (body-channel.ts checked its shape): the session's token, then the stream's pipe. */
  private async acceptBody(request: Request, url: URL): Promise<Response> {
    const expected = this.store.meta()?.bodyToken;
    const given = bearerToken(request.headers.get("authorization"));
    if (!expected || !given || !tokensMatch(given, expected) || !this.socket()) {
      void request.body?.cancel().catch(() => undefined);
      return new ServiceError(401, TunnelErrorCode.agentEndpoint, "The body channel's token is not this session's, or the session is over.").toResponse();
    }
    if (!request.body) return new ServiceError(400, TunnelErrorCode.agentEndpoint, "The body channel's POST has no body.").toResponse();
    const length = Number(request.headers.get(BODY_LENGTH_HEADER));
    const outcome = await this.streams.attachBody(Number(url.searchParams.get("stream")), request.body, length);
    if (outcome.ok) return new Response(null, { status: 204 });
    return new ServiceError(outcome.status, TunnelErrorCode.agentEndpoint, `The body channel did not complete: ${outcome.message}`).toResponse();
  }

  /** Takes every tunnel of the session offline and forgets the session. */
  private async endSession(reason: string): Promise<void> {
    this.streams.failAll({ code: "agent_disconnected", message: reason });
    this.publicSockets.close("the tunnel's agent went away");
    await this.ctx.storage.deleteAlarm();
    await this.tunnels.endSession();
  }

  private async protocolError(ws: WebSocket, message: string): Promise<void> {
    closeQuietly(ws, CloseCode.protocolError, `protocol error: ${message}`);
    await this.endSession(`protocol error: ${message}`);
  }

  /** Frames go out batched: those sent in one turn share a WebSocket message. */
  private send(frame: Frame): void {
    this.outbox.push(frame);
  }

  private write(message: Uint8Array): void {
    const ws = this.socket();
    if (!ws) return;
    try {
      ws.send(message);
    } catch {
      // the socket is closing; its close handler ends the session
    }
  }

  private socket(): WebSocket | undefined {
    if (this.agentSocket?.readyState === WebSocket.OPEN) return this.agentSocket;
    this.agentSocket = this.ctx.getWebSockets(AGENT_TAG).find((ws) => ws.readyState === WebSocket.OPEN);
    return this.agentSocket;
  }
}

function isSessionFrame(frame: Frame): boolean {
  return frame.type === "hello" || frame.type === "start_tunnel" || frame.type === "stop_tunnel" || !("stream" in frame);
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, closeReason(reason));
  } catch {
    // already closed
  }
}
