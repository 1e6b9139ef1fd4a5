/** The agent's side of a WebSocket relayed through a tunnel: a `ws` client to the local service. */

import type { IncomingMessage } from "node:http";
import WebSocket from "ws";
import { HOP_BY_HOP_HEADERS } from "../../relay/http-semantics.ts";
import { MAX_WS_MESSAGE } from "../../relay/protocol.ts";

export interface LocalSocketEvents {
  /** The local service accepted the upgrade; `headers` are its 101 response's. */
  open(headers: Array<[string, string]>): void;
  message(bytes: Uint8Array, binary: boolean): void;
  close(code: number, reason: string): void;
  /** The local service answered the upgrade with an ordinary response. */
  refused(status: number, statusText: string, headers: Array<[string, string]>, body: Buffer): void;
  /** No connection, or it broke before the upgrade. */
  failed(error: NodeJS.ErrnoException, opened: boolean): void;
}

export interface LocalSocket {
  send(bytes: Uint8Array, binary: boolean): void;
  close(code: number, reason: string): void;
  terminate(): void;
}

/** Headers the `ws` client makes itself, or that describe the public client's hop only. */
const HANDSHAKE_HEADERS = new Set(["sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol", "sec-websocket-accept"]);

function pairs(raw: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const lower = raw[i].toLowerCase();
    if (!HOP_BY_HOP_HEADERS.has(lower) && lower !== "sec-websocket-accept") out.push([raw[i], raw[i + 1]]);
  }
  return out;
}

export function connectLocalWebSocket(
  base: URL,
  target: string,
  headers: ReadonlyArray<readonly [string, string]>,
  events: LocalSocketEvents,
  { handshakeTimeoutMs }: { handshakeTimeoutMs: number },
): LocalSocket {
  const url = new URL(target, base);
  url.protocol = base.protocol === "https:" ? "wss:" : "ws:";
  // No prototype: header names come from the public client, and `constructor` or `__proto__` are names like any other.
  const forwarded: Record<string, string> = Object.create(null);
  let protocols: string[] | undefined;
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (lower === "sec-websocket-protocol")
      protocols = value
        .split(",")
        .map((part) => part.trim())
        .filter(Boolean);
    if (HANDSHAKE_HEADERS.has(lower) || HOP_BY_HOP_HEADERS.has(lower)) continue;
    forwarded[lower] = forwarded[lower] === undefined ? value : `${forwarded[lower]}, ${value}`;
  }
  const ws = new WebSocket(url, protocols, {
    headers: forwarded,
    perMessageDeflate: false,
    handshakeTimeout: handshakeTimeoutMs,
    maxPayload: MAX_WS_MESSAGE,
    rejectUnauthorized: false,
  });
  let opened = false;
  ws.on("upgrade", (response: IncomingMessage) => {
    opened = true;
    events.open(pairs(response.rawHeaders));
  });
  ws.on("unexpected-response", (_request, response: IncomingMessage) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.on("end", () => {
      events.refused(response.statusCode ?? 502, response.statusMessage ?? "", pairs(response.rawHeaders), Buffer.concat(chunks));
      ws.terminate();
    });
  });
  ws.on("message", (data: Buffer, isBinary: boolean) => events.message(data, isBinary));
  ws.on("close", (code, reason) => {
    if (opened) events.close(code, reason.toString());
  });
  ws.on("error", (error: NodeJS.ErrnoException) => {
    if (!opened) events.failed(error, false);
  });
  return {
    send: (bytes, binary) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(bytes, { binary });
    },
    close: (code, reason) => {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason);
    },
    terminate: () => ws.terminate(),
  };
}
