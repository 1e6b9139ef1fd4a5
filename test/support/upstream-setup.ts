/** Starts a real local upstream (node:http) for the worker tests; its port reaches tests via inject("upstreamPort"). */

import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Server } from "node:net";
import type { TestProject } from "vitest/node";

import type {} from "../worker/provided.d.ts";

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Switchable upstreams for circuit breaker tests: name → failing?, and how often each was called. */
const flaky = new Map<string, { failing: boolean; hits: number }>();
/** JWKS documents for jwt-validation tests: PUT /jwks/<name> stores the body, GET serves it and counts the GETs. */
const jwksDocuments = new Map<string, { body: string; hits: number }>();
/** Open connections of the TCP echo server, reported at /tcp-connections. */
let tcpConnections = 0;

function flakyState(name: string) {
  let state = flaky.get(name);
  if (!state) flaky.set(name, (state = { failing: false, hits: 0 }));
  return state;
}

/**
 * /echo → JSON of what arrived; /bytes/<n> → n bytes streamed; /status/<code> → that status; /delay/<ms> → answers
 * late; /jwks/<name> → a stored JWKS (x-jwks-hits: the GETs so far; HEAD reads it without counting).
 */
async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? "/", "http://upstream");
  // /flaky/<name>: 500 while failing, else 200; /control/<name>/(fail|recover|hits) switches and reports.
  const control = url.pathname.match(/^\/control\/([\w-]+)\/(fail|recover|hits)$/);
  if (control) {
    const state = flakyState(control[1]);
    if (control[2] !== "hits") state.failing = control[2] === "fail";
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(state));
    return;
  }
  const jwks = url.pathname.match(/^\/jwks\/([\w-]+)$/);
  if (jwks) {
    const document = jwksDocuments.get(jwks[1]) ?? { body: '{"keys":[]}', hits: 0 };
    if (request.method === "PUT") document.body = (await readBody(request)).toString("utf8");
    else if (request.method === "GET") document.hits++;
    jwksDocuments.set(jwks[1], document);
    response.writeHead(200, { "content-type": "application/json", "x-jwks-hits": String(document.hits) });
    response.end(document.body);
    return;
  }
  if (url.pathname === "/tcp-connections") {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ open: tcpConnections }));
    return;
  }
  const flakyName = url.pathname.match(/\/flaky\/([\w-]+)$/);
  if (flakyName) {
    const state = flakyState(flakyName[1]);
    state.hits++;
    response.writeHead(state.failing ? 500 : 200, { "content-type": "text/plain" });
    response.end(state.failing ? "failing" : "ok");
    return;
  }
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
      // What arrived, byte for byte, for bodies that are not text.
      bodySha256: createHash("sha256").update(body).digest("hex"),
    }),
  );
}

/** A TCP echo server for the websocket TCP converter; it closes a connection that sends "bye". */
async function startTcpEcho(): Promise<Server> {
  const server = createTcpServer((socket) => {
    tcpConnections++;
    socket.on("close", () => tcpConnections--);
    socket.on("data", (data) => {
      if (data.toString() === "bye") socket.end();
      else socket.write(data);
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

export default async function setup(project: TestProject) {
  const tcpEcho = await startTcpEcho();
  project.provide("tcpEchoPort", (tcpEcho.address() as AddressInfo).port);
  const server = createServer((request, response) => {
    handle(request, response).catch((error) => {
      response.statusCode = 500;
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("upstreamPort", (server.address() as AddressInfo).port);
  return async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => tcpEcho.close(() => resolve()));
  };
}
