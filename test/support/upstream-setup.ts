/**
 * The worker tests' global setup: the one test upstream (test/support/upstream.ts), its port as
 * inject("upstreamPort") (and as inject("usageUpstreamPort") for the LLM routes' tests), and a TCP echo server
 * for the websocket TCP converter as inject("tcpEchoPort").
 */

import { createServer as createTcpServer, type AddressInfo, type Server } from "node:net";
import type { TestProject } from "vitest/node";
import { startUpstream } from "./upstream.ts";

import type {} from "../worker/provided.d.ts";

/** A TCP echo server that closes a connection sending "bye"; `open()` counts its connections. */
async function startTcpEcho(): Promise<{ server: Server; open: () => number }> {
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    socket.on("close", () => connections--);
    socket.on("data", (data) => {
      if (data.toString() === "bye") socket.end();
      else socket.write(data);
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, open: () => connections };
}

export default async function setup(project: TestProject) {
  const tcpEcho = await startTcpEcho();
  project.provide("tcpEchoPort", (tcpEcho.server.address() as AddressInfo).port);
  const upstream = await startUpstream({ tcpConnections: tcpEcho.open, recordSeen: false });
  project.provide("upstreamPort", upstream.port);
  project.provide("usageUpstreamPort", upstream.port);
  return async () => {
    await upstream.close();
    await new Promise<void>((resolve) => tcpEcho.server.close(() => resolve()));
  };
}
