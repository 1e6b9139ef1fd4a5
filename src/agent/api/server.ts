/** Serves the agent API on `web_addr` with @hono/node-server. */

import { createAdaptorServer } from "@hono/node-server";
import type { Hono } from "hono";
import type { AddressInfo } from "node:net";

export interface ApiServer {
  /** `http://host:port` as actually bound (port 0 resolves to the chosen port). */
  readonly url: string;
  close(): Promise<void>;
}

/** Splits `host:port` / `[::1]:port`. */
export function splitHostPort(addr: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(addr);
  if (!match) throw new Error(`web_addr ${JSON.stringify(addr)} is not host:port`);
  return { host: match[1] ?? match[2], port: Number(match[3]) };
}

export async function startApiServer(app: Hono, webAddr: string): Promise<ApiServer> {
  const { host, port } = splitHostPort(webAddr);
  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === "EADDRINUSE"
            ? `web_addr ${webAddr} is in use (is another agent running?); set web_addr or --web-addr`
            : `cannot listen on web_addr ${webAddr}: ${error.message}`,
        ),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
