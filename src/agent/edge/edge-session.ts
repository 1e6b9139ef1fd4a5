/**
 * The agent's session with the edge: one WebSocket to the agent endpoint, authenticated with the API key.
 * It says hello, keeps the session alive with heartbeats (and measures latency with them), answers
 * start/stop requests, hands stream frames to the forwarder, and reconnects with backoff when the edge
 * goes away — except when the edge refused the key, which retrying cannot fix.
 */

import WebSocket from "ws";
import { closeReason } from "../../close-reason.ts";
import { EDGE_DECISIONS_VERSION } from "../../relay/edge-decision.ts";
import { decodeMessage, type UndecodableFrame } from "../../relay/frame-codec.ts";
import type { Frame, FrameOf } from "../../relay/frames.ts";
import { FrameOutbox } from "../../relay/framing.ts";
import { HEARTBEAT_PING, HEARTBEAT_PONG, LARGE_DATA_CHUNK, MAX_DATA_CHUNK, MAX_RESET_MESSAGE, ResetCode } from "../../relay/protocol.ts";
import { RefusalLog } from "../../relay/refusal-log.ts";
import { UNREACHABLE } from "./agent-stream.ts";
import { backoffDelay } from "./backoff.ts";
import { channelTarget, dialEdge, type BodyChannelTarget } from "./edge-endpoints.ts";
import type { EdgeSessionOptions } from "./edge-session-options.ts";
import { PendingRequests } from "./pending-requests.ts";
import { EdgeRefusal, type SessionStatus } from "./session-status.ts";

export type { BodyChannelTarget } from "./edge-endpoints.ts";
export type { EdgeSessionOptions } from "./edge-session-options.ts";
export { EdgeRefusal, type SessionStatus } from "./session-status.ts";

type StartRequest = Omit<FrameOf<"start_tunnel">, "type" | "request_id">;
export type StartedTunnel = FrameOf<"tunnel_started">["tunnel"];

const REFUSAL_STATUSES = new Set([400, 401, 403]);
/** close() cuts a connection that has not ended by then (a network gone silent). */
const CLOSE_FALLBACK_MS = 2000;

export class EdgeSession {
  private current: SessionStatus = { state: "connecting", reconnects: 0 };
  private ws: WebSocket | undefined;
  /** The TCP (or TLS) connection under `ws`, once its upgrade is answered. */
  private connection: { end(written: () => void): unknown } | undefined;
  private readonly pending = new PendingRequests();
  private readonly listeners = new Set<(status: SessionStatus) => void>();
  private readonly onlineListeners = new Set<() => void>();
  private attempt = 0;
  private stopped = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  private lastSeen = 0;
  private pingSentAt = 0;
  private everOnline = false;
  /** Largest data frame body the edge takes (its welcome says; older edges take MAX_DATA_CHUNK). */
  private dataChunk = MAX_DATA_CHUNK;
  /** The body channel this session's edge offered; undefined when it offered none. */
  private channel: BodyChannelTarget | undefined;
  private readonly outbox = new FrameOutbox(
    (message) => {
      if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(message);
    },
    (flush) => setImmediate(flush),
  );

  /** Stream frames from the edge that did not decode: each resets its stream only, logged at a bounded rate. */
  private readonly undecodable: RefusalLog;

  constructor(private readonly options: EdgeSessionOptions) {
    this.undecodable = new RefusalLog({ what: "undecodable stream frames from the edge reset", write: (line) => (options.log ?? console.warn)(line) });
  }

  get status(): SessionStatus {
    return this.current;
  }

  /** Calls `listener` on every status change; returns the unsubscribe function. */
  onStatus(listener: (status: SessionStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Calls `listener` each time a session comes online (the first time and after every reconnect). */
  onOnline(listener: () => void): () => void {
    this.onlineListeners.add(listener);
    return () => this.onlineListeners.delete(listener);
  }

  /** Connects, and keeps reconnecting until close() or a refusal. */
  start(): void {
    this.connect();
  }

  /** Resolves once online; rejects if the edge refuses the agent or the session is closed first. */
  waitOnline(): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (status: SessionStatus) => {
        if (status.state === "online") resolve();
        else if (status.state === "refused") reject(new EdgeRefusal("refused", status.lastError ?? "the edge refused the agent"));
        else if (status.state === "closed") reject(new Error("the agent is shutting down"));
        else return false;
        return true;
      };
      if (check(this.current)) return;
      const off = this.onStatus((status) => {
        if (check(status)) off();
      });
    });
  }

  async startTunnel(request: StartRequest): Promise<StartedTunnel> {
    const answer = await this.request((request_id) => ({ type: "start_tunnel", request_id, ...request }));
    if (answer.type === "tunnel_started") return answer.tunnel;
    if (answer.type === "tunnel_failed") throw new EdgeRefusal(answer.code, answer.message);
    throw new Error(`unexpected answer ${answer.type} to start_tunnel`);
  }

  async stopTunnel(tunnelId: string): Promise<void> {
    await this.request((request_id) => ({ type: "stop_tunnel", request_id, tunnel_id: tunnelId }));
  }

  /** Frames sent in one turn of the event loop share a WebSocket message. */
  send(frame: Frame): void {
    this.outbox.push(frame);
  }

  /** A data frame encoded in place (encodeDataInPlace): a message of its own goes out uncopied. */
  sendEncoded(encoded: Uint8Array): void {
    this.outbox.pushEncoded(encoded);
  }

  /** Largest data frame body the edge of this session takes. */
  get maxDataChunk(): number {
    return this.dataChunk;
  }

  private get userAgent(): string {
    return `tollgate-agent/${this.options.agentVersion}`;
  }

  /** The body channel of the session online now, if its edge offered one. */
  get bodyChannel(): BodyChannelTarget | undefined {
    return this.current.state === "online" ? this.channel : undefined;
  }

  /**
   * Ends the session for good (Ctrl-C): a normal close, so the edge takes the tunnels offline at once. The
   * connection ends as soon as the close frame is written, without waiting for the edge's close frame in
   * reply: a Durable Object's hibernatable WebSocket sends one only if its handler closes the socket, and
   * waiting for it made every Ctrl-C last the whole fallback.
   */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.heartbeatTimer);
    const ws = this.ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
      ws.close(1000, "agent shutting down");
      // end() writes after the close frame: once both are out, nothing is left to wait for.
      if (ws.readyState === WebSocket.CLOSING) this.connection?.end(() => ws.terminate());
      const timer = setTimeout(() => ws.terminate(), this.options.closeTimeoutMs ?? CLOSE_FALLBACK_MS);
      await closed;
      clearTimeout(timer);
    }
    this.update({ state: "closed" });
  }

  private request(build: (requestId: number) => Frame): Promise<Frame> {
    if (this.current.state !== "online" || this.ws?.readyState !== WebSocket.OPEN) {
      return Promise.reject(new EdgeRefusal("offline", `not connected to the edge (${this.current.state})`));
    }
    return this.pending.start(build, (frame) => this.send(frame), this.options.requestTimeoutMs ?? 15_000);
  }

  private update(change: Partial<SessionStatus>): void {
    this.current = { ...this.current, ...change };
    for (const listener of this.listeners) listener(this.current);
  }

  private connect(): void {
    if (this.stopped) return;
    this.update({ state: this.everOnline ? "reconnecting" : "connecting", nextAttemptAt: undefined });
    const { ws, refusal } = dialEdge(this.options.serverAddr, this.options.apiKey, this.userAgent);
    this.ws = ws;
    this.connection = undefined;
    ws.on("upgrade", (response) => {
      if (this.ws === ws) this.connection = response.socket;
    });
    ws.on("open", () => {
      this.lastSeen = Date.now();
      this.send({
        type: "hello",
        agent_version: this.options.agentVersion,
        metadata: this.options.metadata,
        os: `${process.platform}/${process.arch}`,
        max_data_chunk: LARGE_DATA_CHUNK,
        edge_decisions: EDGE_DECISIONS_VERSION,
      });
    });
    ws.on("message", (data: Buffer, isBinary: boolean) => this.onMessage(ws, data, isBinary));
    ws.on("error", (error: Error & { code?: string }) => {
      this.current = { ...this.current, lastError: edgeErrorMessage(error, this.options.serverAddr) };
    });
    ws.on("close", (code, reason) => {
      if (this.ws !== ws) return;
      const refused = refusal();
      const why = refused
        ? `the edge refused the agent: ${refused.message}`
        : this.current.lastError && code === 1006
          ? this.current.lastError
          : `connection closed (${code}${reason.length ? ` ${reason.toString()}` : ""})`;
      this.dropped(why, refused !== undefined && REFUSAL_STATUSES.has(refused.status));
    });
  }

  private onMessage(ws: WebSocket, data: Buffer, isBinary: boolean): void {
    this.lastSeen = Date.now();
    if (!isBinary) {
      if (data.toString() === HEARTBEAT_PONG && this.pingSentAt > 0) this.update({ latencyMs: Date.now() - this.pingSentAt });
      return;
    }
    // data frames up to LARGE_DATA_CHUNK: hello told the edge so (an older edge ignores it and sends less)
    const decoded = decodeMessage(data, LARGE_DATA_CHUNK);
    // only a message that cannot be split into frames, or a broken session frame, ends the session
    if (!decoded.ok) {
      ws.close(1002, closeReason(`protocol error: ${decoded.error}`));
      return;
    }
    for (const frame of decoded.frames) this.onFrame(ws, frame);
    for (const frame of decoded.undecodable) this.onUndecodable(frame);
    this.options.onBatchEnd?.();
  }

  /**
   * A stream frame of the edge's this agent cannot decode: the stream ends here (the forwarder hears it as a
   * reset) and the edge is told with one; the session and its other streams go on.
   */
  private onUndecodable(frame: UndecodableFrame): void {
    this.undecodable.refused(frame.error);
    const failure = { code: ResetCode.protocolError, message: `the agent could not decode a ${frame.type} frame: ${frame.error}`.slice(0, MAX_RESET_MESSAGE) };
    this.options.onStreamFrame({ type: "reset", stream: frame.stream, ...failure });
    this.send({ type: "reset", stream: frame.stream, ...failure });
  }

  private onFrame(ws: WebSocket, frame: Frame): void {
    switch (frame.type) {
      case "welcome":
        this.attempt = 0;
        this.dataChunk = frame.max_data_chunk ?? MAX_DATA_CHUNK;
        this.channel = channelTarget(frame, this.options.serverAddr, this.userAgent);
        this.update({
          state: "online",
          sessionId: frame.session_id,
          region: frame.region,
          connectedAt: new Date(),
          reconnects: this.everOnline ? this.current.reconnects + 1 : 0,
          lastError: undefined,
        });
        this.everOnline = true;
        this.startHeartbeat(ws, frame.heartbeat_ms);
        for (const listener of this.onlineListeners) listener();
        return;
      case "tunnel_started":
      case "tunnel_failed":
        return this.pending.settle(frame.request_id, frame);
      case "tunnel_stopped":
        if (frame.request_id !== undefined && this.pending.has(frame.request_id)) return this.pending.settle(frame.request_id, frame);
        this.options.onTunnelStopped?.(frame.tunnel_id, frame.reason);
        return;
      case "edge_decision":
        this.options.onEdgeDecision?.(frame);
        return;
      case "request_head":
      case "data":
      case "end":
      case "window":
      case "reset":
      case "ws_message":
      case "ws_close":
        this.options.onStreamFrame(frame);
        return;
      default:
        ws.close(1002, `protocol error: ${frame.type} is sent by the agent, not the edge`);
    }
  }

  private startHeartbeat(ws: WebSocket, intervalMs: number): void {
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = setInterval(() => {
      if (Date.now() - this.lastSeen > intervalMs * 3) {
        this.current = { ...this.current, lastError: `no answer from the edge for ${Math.round((Date.now() - this.lastSeen) / 1000)} s` };
        ws.terminate();
        return;
      }
      this.pingSentAt = Date.now();
      if (ws.readyState === WebSocket.OPEN) ws.send(HEARTBEAT_PING);
    }, intervalMs);
    this.heartbeatTimer.unref?.();
  }

  private dropped(reason: string, refused: boolean): void {
    clearInterval(this.heartbeatTimer);
    this.ws = undefined;
    this.pending.rejectAll(reason);
    this.options.onDisconnect(reason);
    if (this.stopped) return this.update({ state: "closed", lastError: reason });
    if (refused) return this.update({ state: "refused", lastError: reason });
    this.attempt++;
    const delay = backoffDelay(this.attempt, this.options.backoff);
    this.update({ state: this.everOnline ? "reconnecting" : "connecting", lastError: reason, nextAttemptAt: new Date(Date.now() + delay) });
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}

/**
 * A connection error as the agent says it: one that means nothing answers at the edge's address (refused, no such
 * host) asks whether the edge runs there, since that is nearly always why (a gateway not started, or moved).
 */
export function edgeErrorMessage(error: Error & { code?: string }, serverAddr: string): string {
  if (error.code === undefined || !UNREACHABLE.has(error.code)) return error.message;
  return `cannot reach the edge at ${serverAddr} (${error.message}): is it running there? (npm start serves one at http://127.0.0.1:8787; --server-addr points elsewhere)`;
}
