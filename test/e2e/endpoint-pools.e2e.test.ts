/**
 * Endpoint pools end to end: the Worker under `wrangler dev`, two `tollgate http --pooling-enabled` CLI
 * processes on one subdomain, each forwarding to its own local server. Both serve a share of the traffic;
 * killed (SIGKILL, as a crash), one is taken out and the other serves every request after it.
 */

import type { ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { spawnGroup, stopGroup } from "../support/processes.ts";
import { freePort } from "../support/free-port.ts";
import { Edge } from "./support/edge.ts";
import { fetchPublic } from "./support/public-client.ts";

const SUBDOMAIN = "pooled-e2e";
const TOLLGATE = fileURLToPath(new URL("../../bin/tollgate.mjs", import.meta.url));

let edge: Edge;
const servers: Server[] = [];
const agents: ChildProcess[] = [];

/** A local service that answers every request with its own name. */
async function namedServer(name: string): Promise<number> {
  const server = createServer((_request, response) => response.end(name));
  // Longer than the agent keeps an idle local connection (4 s), with room for a loaded machine's late timers:
  // the server never closes a connection the agent is about to reuse, which would be a 502 of its own.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

/** A `tollgate http <port> --subdomain … --pooling-enabled` process; resolves with its tunnel's id and URL once online. */
async function pooledAgent(name: string, port: number): Promise<{ child: ChildProcess; tunnelId: string; publicUrl: string }> {
  const args = [TOLLGATE, "http", String(port), "--server-addr", edge.url, "--web-addr", `127.0.0.1:${await freePort()}`];
  const child = spawnGroup(process.execPath, [...args, "--name", name, "--subdomain", SUBDOMAIN, "--pooling-enabled", "--log", "stdout"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  agents.push(child);
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
  createInterface({ input: child.stderr! }).on("line", (line) => lines.push(`stderr: ${line}`));
  const online = await vi.waitFor(
    () => {
      const line = lines.find((candidate) => candidate.includes('msg="tunnel online"'));
      expect(line, lines.join("\n")).toBeDefined();
      return line!;
    },
    // a ceiling for a busy machine: the CLI runs from source (tsx) here
    { timeout: 45_000, interval: 100 },
  );
  return { child, tunnelId: /id=(tn_\S+)/.exec(online)![1], publicUrl: /url=(\S+)/.exec(online)![1] };
}

/** Sends `n` GETs one after another; answers who served each, or the status and body of a failure. */
async function servedBy(publicUrl: string, n: number): Promise<string[]> {
  const served: string[] = [];
  for (let i = 0; i < n; i++) {
    const answer = await fetchPublic(edge.url, publicUrl, `/${i}`);
    served.push(answer.status === 200 ? answer.body.toString() : `${answer.status} ${answer.body.toString()}`);
  }
  return served;
}

const count = (served: readonly string[], name: string) => served.filter((who) => who === name).length;

beforeAll(async () => {
  edge = await Edge.start({ heartbeatMs: 1000 });
}, 120_000);

afterAll(async () => {
  await Promise.all(agents.map((child) => stopGroup(child, { graceMs: 2000 })));
  for (const server of servers) server.close();
  await edge?.dispose();
});

describe("two agents pooling one URL", () => {
  it("both serve a share of 100 requests; after one is killed, the next 100 all succeed through the other", async () => {
    const [portA, portB] = [await namedServer("a"), await namedServer("b")];
    const a = await pooledAgent("pool-a", portA);
    const b = await pooledAgent("pool-b", portB);
    expect(b.publicUrl).toBe(a.publicUrl);
    expect(a.publicUrl).toMatch(new RegExp(`^http://${SUBDOMAIN}\\.localhost:${edge.port}$`));

    const listed = await edge.management("/tunnels");
    const members = (listed.body.tunnels as Array<{ id: string; public_url: string; pooling_enabled?: boolean }>).filter(
      (tunnel) => tunnel.public_url === a.publicUrl,
    );
    expect(members.map((tunnel) => [tunnel.id, tunnel.pooling_enabled]).sort()).toEqual(
      [
        [a.tunnelId, true],
        [b.tunnelId, true],
      ].sort(),
    );

    const before = await servedBy(a.publicUrl, 100);
    expect(count(before, "a") + count(before, "b"), before.join("\n")).toBe(100);
    // a random pick per request: one member missing all 100 has probability 2^-99
    expect(count(before, "a")).toBeGreaterThan(0);
    expect(count(before, "b")).toBeGreaterThan(0);

    await stopGroup(a.child, { graceMs: 0 });
    // taken out when its session ends: the edge notices the closed connection and the pool loses the member
    await vi.waitFor(
      async () => {
        const { body } = await edge.management("/tunnels");
        expect((body.tunnels as Array<{ id: string }>).map((tunnel) => tunnel.id)).not.toContain(a.tunnelId);
      },
      { timeout: 10_000, interval: 200 },
    );

    const after = await servedBy(a.publicUrl, 100);
    expect(after).toEqual(Array(100).fill("b"));
    console.log(
      `endpoint pool: before the kill a served ${count(before, "a")} and b ${count(before, "b")} of 100; after it b served ${count(after, "b")} of 100`,
    );
  }, 180_000);
});
