/**
 * WebSockets of public clients relayed through a tunnel. Once the agent's local WebSocket is open (a 101
 * response head), the session object accepts the public client's socket through the hibernation API,
 * tagged with its stream and tunnel, so messages keep flowing both ways across hibernation: public
 * messages go to the agent as `ws_message` frames, the agent's are sent to the public socket, and a close
 * on either end closes the other with the same code.
 */

import { MAX_WS_MESSAGE, sendableCloseCode, type Frame, type FrameOf } from "../relay/index.ts";
import { closeReason } from "../close-reason.ts";

export const AGENT_TAG = "agent";
const PUBLIC_TAG = "public";
const streamTag = (stream: number) => `stream:${stream}`;
const tunnelTag = (tunnelId: string) => `tunnel:${tunnelId}`;

interface PublicAttachment {
  readonly stream: number;
  readonly tunnelId: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(sendableCloseCode(code), closeReason(reason));
  } catch {
    // already closed
  }
}

export class PublicSockets {
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly send: (frame: Frame) => void,
  ) {}

  /** True while a public socket of `stream` is open (hibernated ones included). */
  holds(stream: number): boolean {
    return this.ctx.getWebSockets(streamTag(stream)).length > 0;
  }

  isPublic(ws: WebSocket): boolean {
    return this.ctx.getTags(ws).includes(PUBLIC_TAG);
  }

  /** Accepts the public client's WebSocket for `stream` and answers 101 with the agent's head. */
  accept(stream: number, tunnelId: string, headers: Headers): Response {
    const [client, server] = Object.values(new WebSocketPair());
    server.binaryType = "arraybuffer";
    this.ctx.acceptWebSocket(server, [PUBLIC_TAG, streamTag(stream), tunnelTag(tunnelId)]);
    server.serializeAttachment({ stream, tunnelId } satisfies PublicAttachment);
    const answer = new Headers();
    const protocol = headers.get("sec-websocket-protocol");
    if (protocol) answer.set("sec-websocket-protocol", protocol);
    return new Response(null, { status: 101, webSocket: client, headers: answer });
  }

  /** A message from a public client: on to the agent. */
  fromClient(ws: WebSocket, message: string | ArrayBuffer): void {
    const { stream } = ws.deserializeAttachment() as PublicAttachment;
    const bytes = typeof message === "string" ? encoder.encode(message) : new Uint8Array(message);
    if (bytes.byteLength > MAX_WS_MESSAGE) {
      closeQuietly(ws, 1009, `messages through a tunnel are limited to ${MAX_WS_MESSAGE} bytes`);
      this.send({ type: "ws_close", stream, code: 1009, reason: "message too big for the tunnel" });
      return;
    }
    this.send({ type: "ws_message", stream, binary: typeof message !== "string", bytes });
  }

  /** A public client closed (or its connection broke): the agent closes the local socket. */
  clientClosed(ws: WebSocket, code: number, reason: string): void {
    const { stream } = ws.deserializeAttachment() as PublicAttachment;
    this.send({ type: "ws_close", stream, code: sendableCloseCode(code), reason: closeReason(reason) });
    closeQuietly(ws, code, reason);
  }

  /** A frame of the agent about a relayed WebSocket. */
  fromAgent(frame: FrameOf<"ws_message"> | FrameOf<"ws_close">): void {
    const ws = this.ctx.getWebSockets(streamTag(frame.stream))[0];
    if (!ws) {
      if (frame.type === "ws_message") this.send({ type: "ws_close", stream: frame.stream, code: 1001, reason: "the public client is gone" });
      return;
    }
    if (frame.type === "ws_close") return closeQuietly(ws, frame.code, frame.reason);
    try {
      ws.send(frame.binary ? frame.bytes : decoder.decode(frame.bytes));
    } catch {
      this.send({ type: "ws_close", stream: frame.stream, code: 1001, reason: "the public client is gone" });
    }
  }

  /** Closes the public sockets of one tunnel (stopped), or of all (the session ended). */
  close(reason: string, tunnelId?: string): void {
    const sockets = tunnelId === undefined ? this.ctx.getWebSockets(PUBLIC_TAG) : this.ctx.getWebSockets(tunnelTag(tunnelId));
    for (const ws of sockets) closeQuietly(ws, 1001, reason);
  }
}
