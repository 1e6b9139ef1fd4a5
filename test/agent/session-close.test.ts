import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { EdgeSession } from "../../src/agent/edge/edge-session.ts";
import { SilentEdge } from "./support/silent-edge.ts";

const BIN = fileURLToPath(new URL("../../bin/tollgate.mjs", import.meta.url));
/** Longer than any test runs: a close() that waited for it would never finish in time. */
const NEVER_MS = 3_600_000;

const edges: SilentEdge[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.all(edges.splice(0).map((edge) => edge.close()));
});

async function silentEdge(): Promise<SilentEdge> {
  const edge = await SilentEdge.start();
  edges.push(edge);
  return edge;
}

describe("closing the session with an edge that never answers the close frame", () => {
  it("close() sends close 1000 and ends the connection once that is written, without waiting for a reply", async () => {
    const edge = await silentEdge();
    const session = new EdgeSession({
      serverAddr: edge.url,
      apiKey: "k",
      agentVersion: "0.0.0",
      closeTimeoutMs: NEVER_MS,
      onStreamFrame: () => undefined,
      onDisconnect: () => undefined,
    });
    session.start();
    await vi.waitFor(() => expect(edge.frames.length).toBeGreaterThan(0), { timeout: 10_000 }); // hello

    await session.close();

    expect(edge.closeFrame).toEqual({ code: 1000, reason: "agent shutting down" });
    await vi.waitFor(() => expect(edge.connectionEnded).toBe(true));
    expect(session.status.state).toBe("closed");
  });

  it("the agent process exits with 0 after SIGINT, having sent its close frame", async () => {
    const edge = await silentEdge();
    const child = spawn(process.execPath, [BIN, "agent", "http", "9", "--server-addr", edge.url, "--web-addr", "127.0.0.1:0", "--log", "stdout"], {
      stdio: "ignore",
      env: { ...process.env, TOLLGATE_API_KEY: "" },
    });
    children.push(child);
    await vi.waitFor(() => expect(edge.frames.length).toBeGreaterThan(0), { timeout: 20_000 });

    child.kill("SIGINT");

    await vi.waitFor(() => expect(child.exitCode).toBe(0), { timeout: 20_000 });
    expect(edge.closeFrame?.code).toBe(1000);
  });
});
