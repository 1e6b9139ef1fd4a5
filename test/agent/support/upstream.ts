/**
 * A real local service for tunnel tests: /echo answers JSON describing the request (with a SHA-256 of the
 * body), /bytes/<n> streams n bytes of a known pattern, /slow/<ms> answers after a delay, /status/<code>.
 */

import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Upstream {
  readonly port: number;
  readonly url: string;
  /** Requests seen, in order. */
  readonly seen: Array<{ method: string; url: string; headers: IncomingMessage["headers"] }>;
  close(): Promise<void>;
}

/** Byte i of every pattern body: a cycle of 251 values, so shifted or dropped chunks show. */
export function patternBytes(length: number, offset = 0): Buffer {
  const buffer = Buffer.alloc(length);
  for (let i = 0; i < length; i++) buffer[i] = (offset + i) % 251;
  return buffer;
}

export function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? "/", "http://upstream");
  const bytes = /^\/bytes\/(\d+)$/.exec(url.pathname);
  if (bytes) {
    const total = Number(bytes[1]);
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(total) });
    for (let sent = 0; sent < total; ) {
      const size = Math.min(64 * 1024, total - sent);
      if (!response.write(patternBytes(size, sent))) await new Promise((resolve) => response.once("drain", resolve));
      sent += size;
    }
    response.end();
    return;
  }
  const slow = /^\/slow\/(\d+)$/.exec(url.pathname);
  if (slow) await new Promise((resolve) => setTimeout(resolve, Number(slow[1])));
  const hash = createHash("sha256");
  let length = 0;
  for await (const chunk of request) {
    hash.update(chunk as Buffer);
    length += (chunk as Buffer).length;
  }
  const status = /^\/status\/(\d{3})$/.exec(url.pathname);
  response.writeHead(status ? Number(status[1]) : 200, [
    ["content-type", "application/json"],
    ["x-upstream", "yes"],
    ["set-cookie", "a=1"],
    ["set-cookie", "b=2"],
  ]);
  response.end(JSON.stringify({ method: request.method, url: request.url, headers: request.headers, bodyLength: length, bodySha256: hash.digest("hex") }));
}

export async function startUpstream(): Promise<Upstream> {
  const seen: Upstream["seen"] = [];
  const server: Server = createServer((request, response) => {
    seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers });
    handle(request, response).catch((error) => {
      response.statusCode = 500;
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
