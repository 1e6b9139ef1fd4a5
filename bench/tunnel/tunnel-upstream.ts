/**
 * The local service of the tunnel benchmark, in the bench's own process: 12 bytes for small requests,
 * `GET /big` answers BIG_BYTES, and `POST /upload` reads its body and answers the byte count it got.
 */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Size of each large transfer, either way. */
export const BIG_BYTES = 10 * 1024 * 1024;
export const DOWNLOAD_PATH = "/big";
export const UPLOAD_PATH = "/upload";

export interface TunnelUpstream {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function startTunnelUpstream(): Promise<TunnelUpstream> {
  const bigBody = Buffer.alloc(BIG_BYTES, 0x61);
  const server: Server = createServer((req, res) => {
    if (req.method === "GET" && req.url === DOWNLOAD_PATH) {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(BIG_BYTES) });
      res.end(bigBody);
      return;
    }
    if (req.method === "POST" && req.url === UPLOAD_PATH) {
      let bytes = 0;
      req.on("data", (chunk: Buffer) => (bytes += chunk.length));
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(String(bytes));
      });
      return;
    }
    req.resume();
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("hello world\n");
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
