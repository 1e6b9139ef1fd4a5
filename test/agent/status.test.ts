import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WriteStream } from "node:tty";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Agent } from "../../src/agent/agent.ts";
import { runCli } from "../../src/agent/cli.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { RECENT_REQUESTS, RecentRequests, type RecentRequest } from "../../src/agent/status/recent-requests.ts";
import { renderStatus, renderStatusLines } from "../../src/agent/status/status-screen.ts";
import { colourWanted, fit, span } from "../../src/agent/status/terminal-text.ts";
import { Tunnel } from "../../src/agent/tunnels/tunnel-manager.ts";
import { FakeEdge } from "./support/fake-edge.ts";
import { closedPort, startUpstream, type Upstream } from "../support/upstream.ts";

const ESC = "\x1b";
const SGR = /\x1b\[[0-9;]*m/g;
const URL_60 = "http://g6113pfrbvhxk2m9.localhost:8787";

function fakeAgent(
  state: string,
  tunnels: Tunnel[],
  extra: Record<string, unknown> = {},
): Pick<Agent, "version" | "config" | "apiUrl" | "session" | "tunnels"> {
  const parsed = parseAgentConfig({});
  if (!parsed.ok) throw new Error("config");
  return {
    version: "0.1.0",
    config: parsed.config,
    apiUrl: "http://127.0.0.1:4040",
    session: { status: { state, sessionId: "ts_abc", region: "local", latencyMs: 3, reconnects: 0, ...extra } } as unknown as Agent["session"],
    tunnels: { list: () => tunnels } as unknown as Agent["tunnels"],
  };
}

function onlineTunnel(name: string, url: string, port: number): Tunnel {
  const tunnel = new Tunnel(name, { addr: port, inspect: true }, () => []);
  tunnel.state = "online";
  tunnel.publicUrl = url;
  return tunnel;
}

const at = (h: number, m: number, s: number, ms: number) => new Date(2026, 10, 22, h, m, s, ms);
const request = (fields: Partial<RecentRequest> & Pick<RecentRequest, "method" | "path">): RecentRequest => ({
  tunnelName: "web",
  start: at(19, 39, 56, 107),
  replay: false,
  state: "complete",
  ...fields,
});

describe("status screen layout", () => {
  const tunnels: Tunnel[] = [];
  afterAll(() => {
    for (const tunnel of tunnels) tunnel.metrics.close();
  });
  const tunnel = (name: string, url: string, port: number) => {
    const made = onlineTunnel(name, url, port);
    tunnels.push(made);
    return made;
  };

  it("shows the session, each tunnel's public URL and address, and connection counts (120 columns)", () => {
    const text = renderStatus(fakeAgent("online", [tunnel("web", "http://abc.localhost:8787", 3000)]), { width: 120 });
    expect(text).toContain("Session Status                online");
    expect(text).toContain("Session                       ts_abc");
    expect(text).toContain("Latency                       3ms");
    expect(text).toContain("Web Interface                 http://127.0.0.1:4040");
    expect(text).toContain("Forwarding                    http://abc.localhost:8787 -> http://localhost:3000");
    expect(text).toContain(`  web${" ".repeat(25)}0       0       0.00    0.00    0.00    0.00`);
    expect(text).not.toContain(ESC);
  });

  it("keeps the whole public URL on a 60-column terminal, the address on the next line", () => {
    const lines = renderStatusLines(fakeAgent("online", [tunnel("web", URL_60, 3000)]), { width: 60 });
    const at = lines.findIndex((line) => line.startsWith("Forwarding"));
    expect(lines[at]).toBe(`Forwarding       ${URL_60}`);
    expect(lines[at + 1]).toBe(`${" ".repeat(17)}-> http://localhost:3000`);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
  });

  it("puts a URL longer than the space beside the label on a line of its own, whole", () => {
    const long = `http://${"x".repeat(50)}.localhost:8787`;
    const lines = renderStatusLines(fakeAgent("online", [tunnel("web", long, 3000)]), { width: 60 });
    const at = lines.indexOf("Forwarding");
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toBe(long);
    expect(lines[at + 2]).toBe(`${" ".repeat(17)}-> http://localhost:3000`);
  });

  it("says when a tunnel is offline, still with its whole URL, and names tunnels when there are several", () => {
    const web = tunnel("web", URL_60, 3000);
    web.state = "offline";
    const api = tunnel("api", "http://b.localhost:8787", 4000);
    api.state = "failed";
    api.error = "subdomain_in_use";
    const wide = renderStatusLines(fakeAgent("reconnecting", [web, api]), { width: 120, now: () => 0 });
    expect(wide).toContain(`Forwarding                    offline ${URL_60} -> http://localhost:3000 (web)`);
    expect(wide).toContain("Forwarding                    failed: subdomain_in_use -> http://localhost:4000 (api)");
    const narrow = renderStatusLines(fakeAgent("reconnecting", [web, api]), { width: 60, now: () => 0 });
    const at = narrow.indexOf("Forwarding");
    expect(narrow.slice(at, at + 3)).toEqual(["Forwarding", `offline ${URL_60}`, `${" ".repeat(17)}-> http://localhost:3000 (web)`]);
  });

  it("cuts other long lines to the width with an ellipsis", () => {
    const lines = renderStatusLines(fakeAgent("reconnecting", [], { lastError: "connection closed (1006) ".repeat(4) }), { width: 40, now: () => 0 });
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(40);
    expect(lines.find((line) => line.startsWith("Session Status"))).toBe("Session Status   reconnecting: connecti…");
  });

  it("lists recent requests newest first: time, method, path, status, duration, and the tunnel when there are several", () => {
    const agent = fakeAgent("online", [tunnel("web", "http://a.localhost:8787", 3000), tunnel("api", "http://b.localhost:8787", 4000)]);
    const requests = [
      request({ method: "GET", path: "/pending", state: "pending", tunnelName: "api", start: at(19, 40, 1, 5) }),
      request({ method: "POST", path: "/down", state: "failed", errorCode: "upstream_unreachable", durationNs: 2_500_000n, tunnelName: "api" }),
      request({ method: "GET", path: "/missing", statusCode: 404, statusText: "Not Found", durationNs: 12_000_000n }),
      request({ method: "PUT", path: "/orders/43", statusCode: 200, statusText: "OK", durationNs: 1_250_000_000n, replay: true }),
    ];
    // 120 columns: the path column is as wide as the longest path needs, at least 20 characters
    const path = (text: string) => text.padEnd(21);
    const wide = renderStatusLines(agent, { width: 120, requests }).map((line) => line.trimEnd());
    const list = wide.slice(wide.indexOf("HTTP Requests"));
    expect(list.slice(0, 3)).toEqual(["HTTP Requests", "-------------", ""]);
    expect(list.slice(3)).toEqual([
      `19:40:01.005 GET     ${path("/pending")}…${" ".repeat(29)}api`,
      `19:39:56.107 POST    ${path("/down")}failed unreachable   2.5 ms   api`,
      `19:39:56.107 GET     ${path("/missing")}404 Not Found        12 ms    web`,
      `19:39:56.107 PUT     ${path("↻ /orders/43")}200 OK               1.25 s   web`,
    ]);

    // 60 columns: seconds only, status codes without reasons
    const cut = (text: string) => text.padEnd(21);
    const narrow = renderStatusLines(agent, { width: 60, requests }).map((line) => line.trimEnd());
    const short = narrow.slice(narrow.indexOf("HTTP Requests") + 3);
    expect(short).toEqual([
      `19:40:01 GET     ${cut("/pending")}…${" ".repeat(16)}api`,
      `19:39:56 POST    ${cut("/down")}failed  2.5 ms   api`,
      `19:39:56 GET     ${cut("/missing")}404     12 ms    web`,
      `19:39:56 PUT     ${cut("↻ /orders/43")}200     1.25 s   web`,
    ]);
    for (const line of narrow) expect(line.length).toBeLessThanOrEqual(60);
  });

  it("widens the path column for long paths up to what the other columns leave, then cuts with an ellipsis", () => {
    const agent = fakeAgent("online", [tunnel("web", "http://a.localhost:8787", 3000)]);
    const long = `/search?q=${"a".repeat(200)}`;
    const lines = renderStatusLines(agent, {
      width: 120,
      requests: [request({ method: "GET", path: long, statusCode: 200, statusText: "OK", durationNs: 1_000_000n })],
    });
    expect(lines.at(-1)!.trimEnd()).toBe(`19:39:56.107 GET     ${long.slice(0, 68)}… 200 OK               1.0 ms`);
  });

  it("shows as many requests as the terminal's height leaves room for, and says when there are none", () => {
    const agent = fakeAgent("online", [tunnel("web", "http://a.localhost:8787", 3000)]);
    const requests = Array.from({ length: 20 }, (_, i) => request({ method: "GET", path: `/r${i}` }));
    expect(renderStatusLines(agent, { width: 80, height: 24, requests })).toHaveLength(24);
    expect(renderStatusLines(agent, { width: 80, height: 30, requests })).toHaveLength(30);
    expect(renderStatusLines(agent, { width: 80, requests: [] }).at(-1)).toBe("(none yet)");
  });

  it("colours the session state and statuses when asked: online green, reconnecting yellow, 404 yellow, failed red", () => {
    const web = tunnel("web", "http://a.localhost:8787", 3000);
    const online = renderStatus(fakeAgent("online", [web]), { width: 80, colour: true });
    expect(online).toContain(`Session Status   ${ESC}[32monline${ESC}[0m`);
    const reconnecting = renderStatus(fakeAgent("reconnecting", [web]), { width: 80, colour: true, now: () => 0 });
    expect(reconnecting).toContain(`Session Status   ${ESC}[33mreconnecting${ESC}[0m`);
    const requests = [
      request({ method: "GET", path: "/x", statusCode: 404, statusText: "Not Found" }),
      request({ method: "GET", path: "/y", state: "failed", errorCode: "upstream_timeout" }),
    ];
    const text = renderStatus(fakeAgent("online", [web]), { width: 80, colour: true, requests });
    expect(text).toContain(`${ESC}[33m404 Not Found`);
    expect(text).toContain(`${ESC}[31mfailed timeout`);
    // colour never moves anything
    expect(text.replace(SGR, "")).toBe(renderStatus(fakeAgent("online", [web]), { width: 80, requests }));
  });

  it("never writes control characters that came from the network", () => {
    expect(fit([span("/a\x1b[2Jb\x9b")], 20)).toEqual([{ text: "/a?[2Jb?", style: undefined }]);
  });
});

describe("colour decision", () => {
  // Node's own colour logic (FORCE_COLOR, NO_COLOR, TERM) on a stream that is not a real file descriptor.
  const tty = { isTTY: true, getColorDepth: WriteStream.prototype.getColorDepth, hasColors: WriteStream.prototype.hasColors };

  it("colours a terminal that takes 16 colours", () => {
    expect(colourWanted(tty, { TERM: "xterm-256color" })).toBe(true);
  });
  it("never when NO_COLOR is set, whatever the terminal", () => {
    expect(colourWanted(tty, { TERM: "xterm-256color", NO_COLOR: "1" })).toBe(false);
  });
  it("not on a dumb terminal, nor on something that is not a terminal", () => {
    expect(colourWanted(tty, { TERM: "dumb" })).toBe(false);
    expect(colourWanted({ isTTY: false, hasColors: () => true }, { TERM: "xterm-256color" })).toBe(false);
  });
});

describe("recent requests", () => {
  it("keeps the newest, bounded in count and path length", () => {
    const recent = new RecentRequests(3);
    const info = (target: string) => ({
      key: target,
      tunnelName: "web",
      tunnelId: "tn_1",
      inspect: false,
      start: new Date(0),
      startNs: 0n,
      method: "GET",
      target,
      headers: [],
      remoteAddr: "",
      scheme: "http",
    });
    for (const target of ["/1", "/2", "/3", "/4"]) recent.tap.open(info(target))?.onClose?.({ durationNs: 1n });
    expect(recent.list().map((entry) => entry.path)).toEqual(["/4", "/3", "/2"]);
    recent.tap.open(info(`/${"x".repeat(5000)}`));
    expect(recent.list()[0].path).toHaveLength(512);
    recent.close();
    expect(recent.tap.open(info("/after"))).toBeUndefined();
    expect(new RecentRequests().list()).toHaveLength(0);
    expect(RECENT_REQUESTS).toBe(30);
  });
});

/** A terminal that is not one: what the agent writes, with the size and colour support of a real one. */
class FakeTerminal {
  readonly isTTY = true;
  readonly getColorDepth = WriteStream.prototype.getColorDepth;
  readonly hasColors = WriteStream.prototype.hasColors;
  readonly writes: string[] = [];
  constructor(
    readonly columns: number,
    readonly rows: number,
  ) {}
  write(text: string): boolean {
    this.writes.push(text);
    return true;
  }
  /** The last full frame, as lines (the agent homes the cursor, then writes each line followed by erase-to-end). */
  screen(): string[] {
    const frame = this.writes.findLast((text) => text.startsWith(`${ESC}[H`) && text.endsWith(`${ESC}[K${ESC}[J`));
    if (!frame) return [];
    return frame.slice(3, -6).split(`${ESC}[K\r\n`);
  }
}

describe("the status screen of a running agent, on a terminal", () => {
  let edge: FakeEdge;
  let upstream: Upstream;
  let cwd: string;

  beforeAll(async () => {
    edge = await FakeEdge.start();
    upstream = await startUpstream();
    cwd = await mkdtemp(join(tmpdir(), "tollgate-status-"));
    const down = await closedPort();
    await writeFile(
      join(cwd, "agent.yml"),
      `tunnels:\n  web:\n    addr: ${upstream.port}\n    subdomain: g6113pfrbvhxk2m9\n  api:\n    addr: ${upstream.port}\n    inspect: false\n  down:\n    addr: ${down}\n`,
    );
  });
  afterAll(async () => {
    await edge.close();
    await upstream.close();
  });

  /** Ceilings generous enough for a loaded machine: the conditions themselves decide, not the time. */
  const SETTLES = { timeout: 20_000, interval: 20 };

  async function run(columns: number, env: Record<string, string>, traffic: (sessions: number) => Promise<void>, until: (screen: string[]) => void) {
    const terminal = new FakeTerminal(columns, 40);
    const controller = new AbortController();
    const args = ["agent", "start", "--all", "--server-addr", edge.url, "--web-addr", "127.0.0.1:0"];
    const sessions = edge.sessions.length;
    const exited = runCli(args, { stdout: terminal, stderr: { write: () => true }, cwd, env, signal: controller.signal });
    try {
      await vi.waitFor(() => expect(terminal.screen().join("\n")).toContain("Forwarding"), SETTLES);
      await vi.waitFor(() => expect(edge.started.size).toBeGreaterThanOrEqual(3), SETTLES);
      // A relay sent while the session is still settling can be refused; send the traffic again until the
      // screen shows it (the list keeps the newest, so repeats do not hide anything).
      await vi.waitFor(
        async () => {
          await traffic(sessions);
          until(terminal.screen());
        },
        { ...SETTLES, interval: 250 },
      );
    } finally {
      controller.abort();
    }
    expect(await exited).toBe(0);
    expect(terminal.writes.at(-1)).toBe(`${ESC}[?25h${ESC}[?1049l`);
    return terminal;
  }

  /** One exchange per tunnel: 200 on web, 404 on api (inspect: false), and one the local service refuses on down. */
  const traffic = async (sessions: number) => {
    const session = await edge.session(sessions);
    await session.relay(edge.tunnelId("web"), { method: "GET", target: "/" });
    await session.relay(edge.tunnelId("api"), { method: "GET", target: "/status/404" });
    await session.relay(edge.tunnelId("down"), { method: "POST", target: "/orders" });
  };

  it("60 columns with colour: the whole public URL, and the requests of all three tunnels (inspect: false too)", { timeout: 60_000 }, async () => {
    const terminal = await run(60, { TERM: "xterm-256color" }, traffic, (screen) => {
      const plain = screen.map((line) => line.replace(SGR, ""));
      expect(plain).toContain("Forwarding       http://g6113pfrbvhxk2m9.localhost:8787");
      expect(plain.some((line) => /^\d\d:\d\d:\d\d POST {4}\/orders +failed .+ down$/.test(line.trimEnd()))).toBe(true);
      expect(plain.some((line) => /^\d\d:\d\d:\d\d GET {5}\/status\/404 +404 .+ api$/.test(line.trimEnd()))).toBe(true);
      expect(plain.some((line) => /^\d\d:\d\d:\d\d GET {5}\/ +200 .+ web$/.test(line.trimEnd()))).toBe(true);
    });
    const screen = terminal.screen();
    for (const line of screen) expect(line.replace(SGR, "").length).toBeLessThanOrEqual(60);
    expect(screen.find((line) => line.startsWith("Session Status"))).toBe(`Session Status   ${ESC}[32monline${ESC}[0m`);
    expect(screen.some((line) => line.includes(`${ESC}[33m404`))).toBe(true);
    expect(screen.some((line) => line.includes(`${ESC}[31mfailed`))).toBe(true);
  });

  it("120 columns with NO_COLOR: the same screen with no colour codes, one Forwarding line per tunnel, named", { timeout: 60_000 }, async () => {
    const terminal = await run(120, { TERM: "xterm-256color", NO_COLOR: "1" }, traffic, (screen) => {
      expect(screen.filter((line) => line.includes("404 Not Found")).length).toBeGreaterThanOrEqual(1);
      expect(screen.filter((line) => line.includes("failed unreachable")).length).toBeGreaterThanOrEqual(1);
    });
    const screen = terminal.screen();
    expect(screen.join("\n")).not.toMatch(SGR);
    expect(screen).toContain(`Forwarding                    http://g6113pfrbvhxk2m9.localhost:8787 -> http://localhost:${upstream.port} (web)`);
    expect(screen.find((line) => line.startsWith("Session Status"))).toBe("Session Status                online");
    for (const line of screen) expect(line.length).toBeLessThanOrEqual(120);
  });
});
