/**
 * The minimal origin every benchmarked proxy forwards to: node:http answering 200 with 12 bytes.
 * It runs in a child process so that its event loop does not share a thread with autocannon.
 */

import { fork, type ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

const BODY = Buffer.from("hello bench\n"); // 12 bytes

export interface Upstream {
  readonly origin: string;
  close(): Promise<void>;
}

/** Starts the origin in a child process on a free loopback port. */
export async function startUpstream(): Promise<Upstream> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ["--serve"], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (message) => resolve((message as { port: number }).port));
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the upstream exited early (code ${code})`)));
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill();
      }),
  };
}

function serve(): void {
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { "content-type": "text/plain", "content-length": BODY.length });
    response.end(BODY);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    if (address && typeof address === "object") process.send?.({ port: address.port });
  });
  process.on("disconnect", () => process.exit(0));
}

if (process.argv.includes("--serve")) serve();
