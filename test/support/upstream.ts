/**
 * The one local upstream of every test project (worker, agent, e2e, browser): a real node:http server speaking
 * one dialect. Worker tests reach the one their global setup starts (test/support/upstream-setup.ts, its port
 * as inject("upstreamPort")); agent, e2e and browser tests start their own with startUpstream().
 *
 * Any path ending in
 * - /bytes/<n>: n bytes of patternBytes, streamed with a content-length;
 * - /delay/<ms>: the echo, answered that late;
 * - /status/<code>: the echo with that status;
 * and any other path: the echo, JSON of what arrived ({ method, url, headers, body (text, when at most 64 KiB),
 * bodyLength, bodySha256 }) with x-upstream: yes and two set-cookie fields.
 * Also: the LLM routes of upstream-usage.ts and the stateful ones of upstream-switches.ts.
 */

import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { answerSwitch } from "./upstream-switches.ts";
import { answerUsage, isUsagePath } from "./upstream-usage.ts";

/** Bodies echoed as text up to this size; larger ones only by length and hash. */
const ECHOED_TEXT_BYTES = 64 * 1024;

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

async function streamPattern(response: ServerResponse, total: number): Promise<void> {
  response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(total) });
  for (let sent = 0; sent < total; ) {
    const size = Math.min(64 * 1024, total - sent);
    if (!response.write(patternBytes(size, sent))) await new Promise((resolve) => response.once("drain", resolve));
    sent += size;
  }
  response.end();
}

async function echo(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
  const delay = url.pathname.match(/\/delay\/(\d+)$/);
  if (delay) await new Promise((resolve) => setTimeout(resolve, Number(delay[1])));
  const hash = createHash("sha256");
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of request) {
    hash.update(chunk as Buffer);
    length += (chunk as Buffer).length;
    if (length <= ECHOED_TEXT_BYTES) chunks.push(chunk as Buffer);
  }
  const status = url.pathname.match(/\/status\/(\d{3})$/);
  response.writeHead(status ? Number(status[1]) : 200, [
    ["content-type", "application/json"],
    ["x-upstream", "yes"],
    ["set-cookie", "a=1"],
    ["set-cookie", "b=2"],
  ]);
  const body = length <= ECHOED_TEXT_BYTES ? Buffer.concat(chunks).toString("utf8") : undefined;
  response.end(
    JSON.stringify({ method: request.method, url: request.url, headers: request.headers, body, bodyLength: length, bodySha256: hash.digest("hex") }),
  );
}

export interface UpstreamOptions {
  /** Open connections of the TCP echo server the worker tests' setup runs beside it (0 without one). */
  readonly tcpConnections?: () => number;
  /** Whether `seen` records requests (off for the worker tests' upstream, which their floods reach for a whole run). */
  readonly recordSeen?: boolean;
}

async function handle(request: IncomingMessage, response: ServerResponse, tcpConnections: () => number): Promise<void> {
  const url = new URL(request.url ?? "/", "http://upstream");
  if (isUsagePath(url.pathname)) return answerUsage(request, response);
  if (await answerSwitch(request, response, url, tcpConnections)) return;
  const bytes = url.pathname.match(/\/bytes\/(\d+)$/);
  if (bytes) return streamPattern(response, Number(bytes[1]));
  return echo(request, response, url);
}

export async function startUpstream({ tcpConnections = () => 0, recordSeen = true }: UpstreamOptions = {}): Promise<Upstream> {
  const seen: Upstream["seen"] = [];
  const server: Server = createServer((request, response) => {
    if (recordSeen) seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers });
    handle(request, response, tcpConnections).catch((error) => {
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
