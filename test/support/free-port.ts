/**
 * A loopback port for a server that a test starts as a child process (wrangler dev, the agent's web address),
 * which must be named before the child binds it. Port 0 would hand out a port of the kernel's ephemeral range,
 * which every outgoing connection on the machine also draws from: between the check and the child's bind, a
 * client socket of any other test may take it as its local port, and the child fails with "Address already in
 * use" (seen in CI). Ports below that range are never given to outgoing connections, so one that is free now
 * stays free unless another listener names it on purpose.
 */

import { mkdirSync, openSync, closeSync, readFileSync, statSync, unlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where the kernel's ephemeral range starts (Linux), or the IANA one's start elsewhere. */
function ephemeralRangeStart(): number {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && low > LOWEST_PORT + 1000) return low;
  } catch {
    // Not Linux: fall through.
  }
  return 49152;
}

/** Above the well-known and the commonly configured ports (databases, dev servers in 3000–9999). */
const LOWEST_PORT = 20000;

/** Whether nothing listens on `port` of 127.0.0.1 now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** Where ports handed out are claimed, one file each, across the test processes of every run on this machine. */
const CLAIMS = join(tmpdir(), "tollgate-test-ports");
/** How long a claim keeps its port from others: longer than any one test file holds a server. */
const CLAIM_MS = 10 * 60_000;

/**
 * Claims `port` for this process, atomically across processes (the file is created exclusively): free ports
 * chosen at random by files running at once did collide, the later wrangler dev failing with "Address already
 * in use" (seen in CI). A claim older than CLAIM_MS is a finished run's and is taken over.
 */
function claim(port: number): boolean {
  mkdirSync(CLAIMS, { recursive: true });
  const file = join(CLAIMS, String(port));
  for (let tries = 0; tries < 2; tries++) {
    try {
      closeSync(openSync(file, "wx"));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let age = 0;
      try {
        age = Date.now() - statSync(file).mtimeMs;
      } catch {
        continue; // gone meanwhile: try again
      }
      if (age < CLAIM_MS) return false;
      try {
        unlinkSync(file);
      } catch {
        // another process took it over first; the exclusive create decides
      }
    }
  }
  return false;
}

/**
 * A port of 127.0.0.1 that nothing listens on, outside the ephemeral range, claimed so that no other test process
 * is handed it for the next CLAIM_MS; chosen at random, so claims rarely meet.
 */
export async function freePort(): Promise<number> {
  const highest = ephemeralRangeStart() - 1;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (highest - LOWEST_PORT + 1));
    if ((await isFree(port)) && claim(port)) return port;
  }
  throw new Error(`no free loopback port between ${LOWEST_PORT} and ${highest} after 100 tries`);
}
