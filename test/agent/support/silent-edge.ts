/**
 * An edge that accepts the agent's WebSocket and then never writes a frame, not even a close frame in reply to
 * the agent's: what a Durable Object's hibernatable WebSocket does when its close handler does not close the
 * socket. It records the frames it reads, so tests see what the agent said last.
 */

import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

const ACCEPT_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const CLOSE_OPCODE = 0x8;

export interface ReceivedFrame {
  readonly opcode: number;
  readonly payload: Buffer;
}

export class SilentEdge {
  /** Frames read from the agent, in order. */
  readonly frames: ReceivedFrame[] = [];
  /** The agent ended its side of the connection (or it broke). */
  connectionEnded = false;
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {
    server.on("upgrade", (request: IncomingMessage, socket: Socket) => this.accept(request, socket));
  }

  static async start(): Promise<SilentEdge> {
    const edge = new SilentEdge(createServer((_request, response) => response.writeHead(404).end()));
    await new Promise<void>((resolve) => edge.server.listen(0, "127.0.0.1", resolve));
    return edge;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The close frame the agent sent: its code and reason. */
  get closeFrame(): { code: number; reason: string } | undefined {
    const frame = this.frames.find((candidate) => candidate.opcode === CLOSE_OPCODE);
    return frame && { code: frame.payload.readUInt16BE(0), reason: frame.payload.subarray(2).toString("utf8") };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(request: IncomingMessage, socket: Socket): void {
    this.sockets.add(socket);
    const accept = createHash("sha1").update(`${request.headers["sec-websocket-key"]}${ACCEPT_GUID}`).digest("base64");
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    let pending = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (let frame = readFrame(pending); frame; frame = readFrame(pending)) {
        this.frames.push(frame.frame);
        pending = pending.subarray(frame.length);
      }
    });
    // Ends its side when the agent ends its own, as a TCP peer does; writes nothing before that.
    socket.on("end", () => {
      this.connectionEnded = true;
      socket.end();
    });
    socket.on("error", () => (this.connectionEnded = true));
    socket.on("close", () => this.sockets.delete(socket));
  }
}

/** One masked client frame from the start of `bytes`, or undefined while it is incomplete. */
function readFrame(bytes: Buffer): { frame: ReceivedFrame; length: number } | undefined {
  if (bytes.length < 2) return undefined;
  const short = bytes[1] & 0x7f;
  const lengthBytes = short === 126 ? 2 : short === 127 ? 8 : 0;
  const headerLength = 2 + lengthBytes + 4;
  if (bytes.length < headerLength) return undefined;
  const payloadLength = short === 126 ? bytes.readUInt16BE(2) : short === 127 ? Number(bytes.readBigUInt64BE(2)) : short;
  if (bytes.length < headerLength + payloadLength) return undefined;
  const mask = bytes.subarray(2 + lengthBytes, headerLength);
  const payload = Buffer.from(bytes.subarray(headerLength, headerLength + payloadLength));
  for (let index = 0; index < payload.length; index++) payload[index] ^= mask[index % 4];
  return { frame: { opcode: bytes[0] & 0x0f, payload }, length: headerLength + payloadLength };
}
