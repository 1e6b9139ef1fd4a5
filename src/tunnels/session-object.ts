/**
 * TunnelSession: one Durable Object per agent session (`ts_…`). It holds the agent's WebSocket through the
 * hibernation API (heartbeats are answered without waking it), starts and stops the session's tunnels,
 * and relays public requests to the agent as streams. State that must outlive hibernation (the session and
 * its tunnels) is in storage; streams in flight keep the object awake and live in memory.
 */

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { newId } from "../ids.ts";
import { rfc3339 } from "../time.ts";
import { EdgeStreams } from "./edge-streams.ts";
import { streamFailure } from "./errors.ts";
import { HOST_GRACE_MS, MAX_HOSTS_PER_ACCOUNT, type HostClaim } from "./host-claims.ts";
import { isReservedLabel, publicUrl, randomLabel, type PublicBase } from "./hostnames.ts";
import { AGENT_TAG, PublicSockets } from "./public-sockets.ts";
import { CloseCode, decodeFrames, HEARTBEAT_PING, HEARTBEAT_PONG, ResetCode, TunnelFailure, type Frame, type FrameOf } from "./protocol.ts";
import { FrameOutbox } from "./framing.ts";
import { StreamIds } from "./stream-ids.ts";
import {
  addOnlineTunnel,
  addTunnelSession,
  forgetHost,
  holdHost,
  removeOnlineTunnels,
  removeTunnelSession,
  renewOnlineTunnels,
  tunnelSessionRecord,
  type TunnelRecord,
} from "./registry-client.ts";
import { validateTunnelStart } from "./tunnel-spec.ts";
import { closeReason } from "../close-reason.ts";

/** What the Worker tells a new session about itself. */
export interface SessionInfo {
  readonly sessionId: string;
  readonly accountId: string;
  readonly region: string;
  readonly domain: string;
  readonly publicBase: PublicBase;
  readonly heartbeatMs: number;
  /** The address the agent connected from, for the session record. */
  readonly clientIp: string;
  /** The public id of the API key the agent authenticated with (`cr_…`). */
  readonly credentialId: string;
}

interface SessionMeta extends SessionInfo {
  readonly connectedAt: number;
}

interface SessionTunnel {
  readonly id: string;
  readonly name: string;
  /** Public host label, for endpoint tunnels. */
  readonly label?: string;
}

export const CONNECT_PATH = "/connect";
export const RELAY_PATH = "/relay";
/** The relay answer header that says the tunnel is not (or no longer) served by this session. */
export const OFFLINE_HEADER = "x-tollgate-tunnel-offline";
export const SESSION_INFO_HEADER = "x-tollgate-session-info";
/** A session is dead after this many heartbeat intervals without a ping or frame. */
const MISSED_HEARTBEATS = 3;
/** Registry leases outlast one missed liveness check (they matter only when the edge itself died). */
const LEASE_HEARTBEATS = MISSED_HEARTBEATS * 2;
const META_KEY = "meta";
const STREAM_IDS_KEY = "stream-ids";
const TUNNEL_PREFIX = "tunnel:";
const RANDOM_LABEL_ATTEMPTS = 4;
const ALARM_SLACK_MS = 100;

export class TunnelSession extends DurableObject<Env> {
  private readonly streams: EdgeStreams;
  private readonly outbox: FrameOutbox;
  private readonly publicSockets: PublicSockets;
  private lastFrameAt = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(HEARTBEAT_PING, HEARTBEAT_PONG));
    this.outbox = new FrameOutbox(
      (message) => this.write(message),
      (flush) => queueMicrotask(flush),
    );
    this.publicSockets = new PublicSockets(ctx, (frame) => this.send(frame));
    const ids = new StreamIds(
      { read: () => ctx.storage.kv.get<number>(STREAM_IDS_KEY), write: (reservedUpTo) => ctx.storage.kv.put(STREAM_IDS_KEY, reservedUpTo) },
      (id) => this.streams.has(id) || this.publicSockets.holds(id),
    );
    this.streams = new EdgeStreams({
      send: (frame) => this.send(frame),
      allocateId: () => ids.allocate(),
      failureResponse: (failure, host) => streamFailure(failure.code, failure.message, host).toResponse(),
      acceptWebSocket: (stream, request, headers) => this.publicSockets.accept(stream, request.tunnelId, headers),
    });
  }

  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === CONNECT_PATH) return this.acceptAgent(request);
    if (url.pathname === RELAY_PATH) return this.relay(request, url);
    return new Response("unknown session path", { status: 404 });
  }

  /** RPC for TunnelHost: does this session serve the tunnel right now? */
  servesTunnel(tunnelId: string): boolean {
    return this.socket() !== undefined && this.ctx.storage.kv.get(TUNNEL_PREFIX + tunnelId) !== undefined;
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (this.publicSockets.isPublic(ws)) return this.publicSockets.fromClient(ws, message);
    this.lastFrameAt = Date.now();
    if (typeof message === "string") {
      if (message === HEARTBEAT_PING) ws.send(HEARTBEAT_PONG);
      else await this.protocolError(ws, "text messages other than heartbeats are not part of the protocol");
      return;
    }
    const decoded = decodeFrames(message);
    if (!decoded.ok) return this.protocolError(ws, decoded.error);
    // Stream frames are handled synchronously, in the order they came; only session frames (start and
    // stop, which call other objects) are awaited, after the batch's stream frames are dealt with.
    const sessionFrames: Frame[] = [];
    try {
      for (const frame of decoded.frames) {
        if (isSessionFrame(frame)) sessionFrames.push(frame);
        else this.onStreamFrame(ws, frame);
      }
    } finally {
      this.streams.endBatch();
    }
    for (const frame of sessionFrames) await this.onSessionFrame(ws, frame);
  }

  private async onSessionFrame(ws: WebSocket, frame: Frame): Promise<void> {
    switch (frame.type) {
      case "hello":
        return this.hello(frame);
      case "start_tunnel":
        return this.startTunnel(frame);
      case "stop_tunnel":
        return this.stopTunnel(frame);
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

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    if (this.publicSockets.isPublic(ws)) return this.publicSockets.clientClosed(ws, code, reason);
    await this.endSession("the agent closed its session");
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    if (this.publicSockets.isPublic(ws)) return this.publicSockets.clientClosed(ws, 1006, "the public client's connection failed");
    await this.endSession("the agent's connection failed");
  }

  override async alarm(): Promise<void> {
    const meta = this.meta();
    if (!meta) return;
    const ws = this.socket();
    if (!ws) return this.endSession("the agent's connection is gone");
    const lastPing = this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
    const lastSeen = Math.max(lastPing, this.lastFrameAt, meta.connectedAt);
    const deadline = lastSeen + meta.heartbeatMs * MISSED_HEARTBEATS;
    if (Date.now() > deadline) {
      closeQuietly(ws, CloseCode.heartbeatTimeout, "no heartbeat from the agent");
      return this.endSession("the agent stopped answering heartbeats");
    }
    // renews the session record too, so it is renewed whether or not the session has tunnels
    await renewOnlineTunnels(this.env, meta.accountId, meta.sessionId, meta.heartbeatMs * LEASE_HEARTBEATS);
    // Wake up next when the session would be dead if no ping came meanwhile: a silent agent is found
    // right at its deadline, and a healthy session leaves the object idle long enough to hibernate.
    await this.ctx.storage.setAlarm(Math.max(deadline, Date.now() + meta.heartbeatMs) + ALARM_SLACK_MS);
  }

  private async acceptAgent(request: Request): Promise<Response> {
    const info = JSON.parse(request.headers.get(SESSION_INFO_HEADER) ?? "null") as SessionInfo | null;
    if (!info) return new Response("missing session info", { status: 400 });
    for (const old of this.ctx.getWebSockets(AGENT_TAG)) closeQuietly(old, CloseCode.sessionReplaced, "replaced by a new connection");
    const [client, server] = Object.values(new WebSocketPair());
    server.binaryType = "arraybuffer";
    this.ctx.acceptWebSocket(server, [AGENT_TAG]);
    const meta: SessionMeta = { ...info, connectedAt: Date.now() };
    this.ctx.storage.kv.put(META_KEY, meta);
    await this.ctx.storage.setAlarm(Date.now() + meta.heartbeatMs * MISSED_HEARTBEATS + ALARM_SLACK_MS);
    return new Response(null, { status: 101, webSocket: client });
  }

  private async relay(request: Request, url: URL): Promise<Response> {
    const tunnelId = url.searchParams.get("tunnel") ?? "";
    if (!this.socket() || !this.ctx.storage.kv.get(TUNNEL_PREFIX + tunnelId)) {
      await request.body?.cancel();
      return new Response(null, { status: 404, headers: { [OFFLINE_HEADER]: "1" } });
    }
    return this.streams.open({
      tunnelId,
      method: request.method,
      target: url.searchParams.get("target") ?? "/",
      headers: request.headers,
      clientAddr: url.searchParams.get("client") ?? "",
      scheme: url.searchParams.get("scheme") ?? "http",
      host: url.searchParams.get("host") ?? "",
      body: request.body,
      upgrade: request.headers.get("upgrade")?.toLowerCase() === "websocket",
    });
  }

  private async hello(frame: FrameOf<"hello">): Promise<void> {
    const meta = this.meta();
    if (!meta) return;
    this.send({ type: "welcome", session_id: meta.sessionId, region: meta.region, heartbeat_ms: meta.heartbeatMs });
    await this.recordSession(meta, frame);
  }

  /** Lists the session in the account's registry (management's `/tunnel_sessions`) once the agent said who it is. */
  private async recordSession(meta: SessionMeta, hello: FrameOf<"hello">): Promise<void> {
    const record = tunnelSessionRecord(meta, meta.connectedAt, hello);
    await addTunnelSession(this.env, meta.accountId, record, meta.heartbeatMs * LEASE_HEARTBEATS);
    // the session ended while it was being recorded: endSession ran before the record existed
    if (!this.socket()) await removeTunnelSession(this.env, meta.accountId, meta.sessionId);
  }

  private async startTunnel(frame: FrameOf<"start_tunnel">): Promise<void> {
    const meta = this.meta();
    const failed = (code: string, message: string) => this.send({ type: "tunnel_failed", request_id: frame.request_id, code, message });
    if (!meta) return failed(TunnelFailure.internal, "the session is not set up; reconnect");
    const checked = validateTunnelStart(frame);
    if (!checked.ok) return failed(checked.code, checked.message);
    const spec = checked.spec;

    const id = newId("tn");
    const startedAt = rfc3339();
    const base = { id, started_at: startedAt, region: meta.region, tunnel_session: { id: meta.sessionId }, forwards_to: spec.forwardsTo };
    // Known to the session before its host is claimed, so a public request racing the start finds it.
    this.ctx.storage.kv.put(TUNNEL_PREFIX + id, { id, name: spec.name } satisfies SessionTunnel);
    let record: TunnelRecord;
    let label: string | undefined;
    if (spec.kind === "endpoint") {
      const claim: HostClaim = { accountId: meta.accountId, sessionId: meta.sessionId, tunnelId: id, trafficPolicy: spec.trafficPolicy };
      const claimed = await this.claimHost(meta, claim, spec.subdomain);
      if (!claimed.ok) {
        this.ctx.storage.kv.delete(TUNNEL_PREFIX + id);
        return failed(claimed.code, claimed.message);
      }
      label = claimed.label;
      record = {
        ...base,
        public_url: publicUrl(label, meta.domain, meta.publicBase),
        proto: meta.publicBase.scheme,
        endpoint: { id: newId("ep") },
        ...(spec.metadata !== undefined ? { metadata: spec.metadata } : {}),
      };
    } else {
      record = {
        ...base,
        labels: { ...spec.labels },
        backends: [{ id: await backendId(meta.accountId, spec.labels ?? {}) }],
        ...(spec.metadata !== undefined ? { metadata: spec.metadata } : {}),
      };
    }
    const tunnel: SessionTunnel = { id, name: spec.name, label };
    this.ctx.storage.kv.put(TUNNEL_PREFIX + id, tunnel);
    await addOnlineTunnel(this.env, meta.accountId, meta.sessionId, record, meta.heartbeatMs * LEASE_HEARTBEATS);
    if (!this.socket()) {
      // the session ended while the tunnel was being set up: undo what endSession could not see
      await this.dropTunnel(meta, tunnel);
      return;
    }
    this.send({
      type: "tunnel_started",
      request_id: frame.request_id,
      tunnel: { id, name: spec.name, public_url: record.public_url, proto: record.proto, subdomain: label, started_at: startedAt },
    });
  }

  private async stopTunnel(frame: FrameOf<"stop_tunnel">): Promise<void> {
    const meta = this.meta();
    const tunnel = this.ctx.storage.kv.get<SessionTunnel>(TUNNEL_PREFIX + frame.tunnel_id);
    if (meta && tunnel) await this.dropTunnel(meta, tunnel);
    this.send({ type: "tunnel_stopped", request_id: frame.request_id, tunnel_id: frame.tunnel_id, reason: tunnel ? "stopped by the agent" : "not running" });
  }

  /**
   * Claims the wanted subdomain, or a random free label, within the account's quota of held host names.
   * Reserved names are never handed out; a name another account used lately is kept for it (host-claims.ts).
   */
  private async claimHost(
    meta: SessionMeta,
    claim: HostClaim,
    subdomain: string | undefined,
  ): Promise<{ ok: true; label: string } | { ok: false; code: string; message: string }> {
    if (subdomain && isReservedLabel(subdomain)) {
      return { ok: false, code: TunnelFailure.subdomainReserved, message: `subdomain '${subdomain}' is reserved: names such as www, api, admin and login are never handed out` };
    }
    const candidates = subdomain ? [subdomain] : Array.from({ length: RANDOM_LABEL_ATTEMPTS }, () => randomLabel());
    let refusal = "";
    for (const label of candidates) {
      const hold = { label, tunnelId: claim.tunnelId, sessionId: meta.sessionId };
      if (!(await holdHost(this.env, meta.accountId, hold, MAX_HOSTS_PER_ACCOUNT, meta.heartbeatMs * LEASE_HEARTBEATS))) {
        return {
          ok: false,
          code: TunnelFailure.hostQuotaExceeded,
          message: `the account already holds ${MAX_HOSTS_PER_ACCOUNT} host names (its online tunnels, and for ${HOST_GRACE_MS / 60_000} minutes those of tunnels that went offline); stop a tunnel first`,
        };
      }
      const result = await hostObject(this.env, label).claim(claim);
      if (result.ok) return { ok: true, label };
      await forgetHost(this.env, meta.accountId, label, claim.tunnelId);
      refusal = result.reason;
    }
    return {
      ok: false,
      code: TunnelFailure.subdomainInUse,
      message: subdomain ? `subdomain '${subdomain}' ${refusal}` : "could not find a free host name; try again",
    };
  }

  private async dropTunnel(meta: SessionMeta, tunnel: SessionTunnel): Promise<void> {
    this.ctx.storage.kv.delete(TUNNEL_PREFIX + tunnel.id);
    this.streams.failTunnel(tunnel.id, { code: ResetCode.unknownTunnel, message: "the tunnel was stopped" });
    this.publicSockets.close("the tunnel was stopped", tunnel.id);
    await Promise.allSettled([
      tunnel.label ? hostObject(this.env, tunnel.label).release(tunnel.id) : Promise.resolve(),
      removeOnlineTunnels(this.env, meta.accountId, meta.sessionId, [tunnel.id], HOST_GRACE_MS),
    ]);
  }

  /** Takes every tunnel of the session offline and forgets the session (its registry record too). */
  private async endSession(reason: string): Promise<void> {
    this.streams.failAll({ code: "agent_disconnected", message: reason });
    this.publicSockets.close("the tunnel's agent went away");
    const meta = this.meta();
    const tunnels = this.tunnels();
    for (const tunnel of tunnels) this.ctx.storage.kv.delete(TUNNEL_PREFIX + tunnel.id);
    this.ctx.storage.kv.delete(META_KEY);
    await this.ctx.storage.deleteAlarm();
    if (!meta) return;
    await Promise.allSettled([
      ...tunnels.filter((tunnel) => tunnel.label).map((tunnel) => hostObject(this.env, tunnel.label!).release(tunnel.id)),
      removeOnlineTunnels(this.env, meta.accountId, meta.sessionId, undefined, HOST_GRACE_MS),
    ]);
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
    return this.ctx.getWebSockets(AGENT_TAG).find((ws) => ws.readyState === WebSocket.OPEN);
  }

  private meta(): SessionMeta | undefined {
    return this.ctx.storage.kv.get<SessionMeta>(META_KEY);
  }

  private tunnels(): SessionTunnel[] {
    return [...this.ctx.storage.kv.list<SessionTunnel>({ prefix: TUNNEL_PREFIX })].map(([, tunnel]) => tunnel);
  }
}

function isSessionFrame(frame: Frame): boolean {
  return frame.type === "hello" || frame.type === "start_tunnel" || frame.type === "stop_tunnel" || !("stream" in frame);
}

function hostObject(env: Env, label: string) {
  return env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label));
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, closeReason(reason));
  } catch {
    // already closed
  }
}

/** Tunnel group backends are shared by tunnels with the same labels, so the id is derived from them. */
async function backendId(accountId: string, labels: Readonly<Record<string, string>>): Promise<string> {
  const canonical = JSON.stringify([accountId, Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical)));
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let value = 0n;
  for (const byte of digest.subarray(0, 20)) value = (value << 8n) | BigInt(byte);
  let body = "";
  while (value > 0n) {
    body = alphabet[Number(value % 62n)] + body;
    value /= 62n;
  }
  return `bkdtg_${body.padStart(27, "0").slice(-27)}`;
}
