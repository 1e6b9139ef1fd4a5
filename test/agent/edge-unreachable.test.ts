/** An agent whose edge does not answer says where it looked and asks whether the edge runs there (issue 45). */

import { createServer, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { edgeErrorMessage } from "../../src/agent/edge/edge-session.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";

/** A loopback port nothing listens on: bound, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((closed) => server.close(() => closed()));
  return port;
}

let agent: Agent | undefined;
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
});

describe("an edge that does not answer", () => {
  it("is named with the question whether it runs there, not a bare ECONNREFUSED", async () => {
    const edge = `http://127.0.0.1:${await closedPort()}`;
    const parsed = parseAgentConfig({ server_addr: edge, web_addr: false });
    if (!parsed.ok) throw new Error("bad test config");
    agent = await startAgent({ config: parsed.config, backoff: { initialMs: 50, maxMs: 200 } });
    agent.ready.catch(() => undefined);
    await vi.waitFor(() => expect(agent?.session.status.lastError).toContain("is it running there?"), { timeout: 10_000, interval: 20 });
    expect(agent.session.status.lastError).toMatch(new RegExp(`^cannot reach the edge at ${edge} \\(connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+\\)`));
  });

  it("other errors are said as they came", () => {
    expect(edgeErrorMessage(Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }), "https://edge.test")).toBe(
      "self-signed certificate",
    );
    expect(edgeErrorMessage(Object.assign(new Error("getaddrinfo ENOTFOUND edge.test"), { code: "ENOTFOUND" }), "https://edge.test")).toContain(
      "cannot reach the edge at https://edge.test (getaddrinfo ENOTFOUND edge.test): is it running there?",
    );
  });
});
