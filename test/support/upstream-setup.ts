/** Starts a real local upstream (node:http) for the worker tests; its port reaches tests via inject("upstreamPort"). */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

import type {} from "../worker/provided.d.ts";

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** /echo → JSON of what arrived; /bytes/<n> → n bytes streamed; /status/<code> → that status; /delay/<ms> → answers late. */
async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? "/", "http://upstream");
  const bytes = url.pathname.match(/\/bytes\/(\d+)$/);
  if (bytes) {
    const total = Number(bytes[1]);
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(total) });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    while (sent < total) {
      const size = Math.min(chunk.length, total - sent);
      if (!response.write(chunk.subarray(0, size))) await new Promise((resolve) => response.once("drain", resolve));
      sent += size;
    }
    response.end();
    return;
  }
  const delay = url.pathname.match(/\/delay\/(\d+)$/);
  if (delay) await new Promise((resolve) => setTimeout(resolve, Number(delay[1])));
  const status = url.pathname.match(/\/status\/(\d{3})$/);
  const body = await readBody(request);
  response.writeHead(status ? Number(status[1]) : 200, { "content-type": "application/json", "x-upstream": "yes", "set-cookie": "a=1" });
  response.end(
    JSON.stringify({
      method: request.method,
      url: request.url,
      headers: request.headers,
      body: body.toString("utf8"),
      bodyLength: body.length,
    }),
  );
}

export default async function setup(project: TestProject) {
  const server = createServer((request, response) => {
    handle(request, response).catch((error) => {
      response.statusCode = 500;
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("upstreamPort", (server.address() as AddressInfo).port);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}
