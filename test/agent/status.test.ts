import { describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { Tunnel } from "../../src/agent/tunnels/tunnel-manager.ts";
import { renderStatus } from "../../src/agent/status/status-view.ts";

function fakeAgent(state: string, tunnels: Tunnel[]): Pick<Agent, "version" | "config" | "apiUrl" | "session" | "tunnels"> {
  const parsed = parseAgentConfig({});
  if (!parsed.ok) throw new Error("config");
  return {
    version: "0.1.0",
    config: parsed.config,
    apiUrl: "http://127.0.0.1:4040",
    session: { status: { state, sessionId: "ts_abc", region: "local", latencyMs: 3, reconnects: 0 } } as unknown as Agent["session"],
    tunnels: { list: () => tunnels } as unknown as Agent["tunnels"],
  };
}

describe("status screen", () => {
  it("shows the session, each tunnel's public URL and address, and connection counts", () => {
    const web = new Tunnel("web", { addr: 3000, inspect: true }, () => []);
    web.state = "online";
    web.publicUrl = "http://abc.localhost:8787";
    const text = renderStatus(fakeAgent("online", [web]), 100);
    web.metrics.close();
    expect(text).toContain("Session Status                online");
    expect(text).toContain("Session                       ts_abc");
    expect(text).toContain("Latency                       3ms");
    expect(text).toContain("Web Interface                 http://127.0.0.1:4040");
    expect(text).toContain("Forwarding                    http://abc.localhost:8787 -> http://localhost:3000");
    expect(text).toContain(`  web${" ".repeat(25)}0       0       0.00    0.00    0.00    0.00`);
  });

  it("fits long lines to the terminal width", () => {
    const text = renderStatus(fakeAgent("reconnecting", []), 40);
    for (const line of text.split("\n")) expect(line.length).toBeLessThanOrEqual(40);
  });
});
