/**
 * The websocket TCP converter: bridges a WebSocket upgrade to a TCP connection to the route's
 * `tcp://host:port` upstream. Binary messages become bytes on the socket (text messages their UTF-8
 * bytes), bytes from the socket become binary messages; either side closing closes the other.
 */

import { connect } from "cloudflare:sockets";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { closeReason } from "../../close-reason.ts";

export interface TcpTarget {
  readonly hostname: string;
  readonly port: number;
}

export function isWebSocketUpgrade(request: Request): boolean {
  return request.headers.get("upgrade")?.toLowerCase() === "websocket";
}

export function bridgeWebSocketToTcp(request: Request, target: TcpTarget, routeLabel: string): Response {
  if (!isWebSocketUpgrade(request)) {
    return new ServiceError(
      400,
      ErrorCode.invalidValue,
      `Route ${routeLabel} bridges WebSockets to tcp://${target.hostname}:${target.port}; send a WebSocket upgrade (Upgrade: websocket).`,
    ).toResponse();
  }
  const socket = connect({ hostname: target.hostname, port: target.port });
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.binaryType = "arraybuffer";
  server.accept();

  const writer = socket.writable.getWriter();
  const encoder = new TextEncoder();
  let closed = false;
  const closeBoth = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    try {
      server.close(code, reason);
    } catch {}
    writer.close().catch(() => {});
    socket.close().catch(() => {});
  };

  // Writes are chained so bytes reach the socket in message order.
  let writes: Promise<void> = Promise.resolve();
  server.addEventListener("message", (event) => {
    const data = event.data;
    const bytes = typeof data === "string" ? encoder.encode(data) : new Uint8Array(data as ArrayBuffer);
    writes = writes.then(() => writer.write(bytes)).catch((error) => closeBoth(1011, `TCP write failed: ${(error as Error).message}`));
  });
  server.addEventListener("close", (event) => {
    if (closed) return;
    closed = true;
    writes.finally(() => {
      writer.close().catch(() => {});
      socket.close().catch(() => {});
    });
    void event;
  });
  server.addEventListener("error", () => closeBoth(1011, "WebSocket error"));

  socket.readable
    .pipeTo(
      new WritableStream<Uint8Array>({
        write(chunk) {
          if (!closed) server.send(chunk);
        },
      }),
    )
    .then(
      () => closeBoth(1000, "TCP connection closed"),
      (error) => closeBoth(1011, closeReason(`TCP connection failed: ${(error as Error).message}`)),
    );

  return new Response(null, { status: 101, webSocket: client });
}
