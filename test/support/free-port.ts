/**
 * A loopback port for a server that a test starts as a child process (wrangler dev, the agent's web address),
 * which must be named before the child binds it. Port 0 would hand out a port of the kernel's ephemeral range,
 * which every outgoing connection on the machine also draws from: between the check and the child's bind, a
 * client socket of any other test may take it as its local port, and the child fails with "Address already in
 * use" (seen in CI). Ports below that range are never given to outgoing connections, so one that is free now
 * stays free unless another listener names it on purpose.
 */

import { readFileSync } from "node:fs";
import { createServer } from "node:net";

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

/** A port of 127.0.0.1 that nothing listens on, outside the ephemeral range; chosen at random so that test files running at once rarely pick the same. */
export async function freePort(): Promise<number> {
  const highest = ephemeralRangeStart() - 1;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (highest - LOWEST_PORT + 1));
    if (await isFree(port)) return port;
  }
  throw new Error(`no free loopback port between ${LOWEST_PORT} and ${highest} after 100 tries`);
}
