/**
 * The live status screen the agent shows on a terminal (session, forwarding, connection counts and rates),
 * redrawn in place. Log lines are agent-log.ts.
 */

import type { Agent } from "../agent.ts";
import type { SessionStatus } from "../edge/edge-session.ts";
import type { Tunnel } from "../tunnels/tunnel-manager.ts";

export interface StatusStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

function pad(text: string, width: number): string {
  return text.length >= width ? `${text} ` : text + " ".repeat(width - text.length);
}

function sessionLabel(status: SessionStatus): string {
  switch (status.state) {
    case "online":
      return "online";
    case "connecting":
    case "reconnecting": {
      const wait = status.nextAttemptAt ? ` (retry in ${Math.max(0, Math.ceil((status.nextAttemptAt.getTime() - Date.now()) / 1000))}s)` : "";
      return `${status.state}${wait}${status.lastError ? `: ${status.lastError}` : ""}`;
    }
    default:
      return `${status.state}${status.lastError ? `: ${status.lastError}` : ""}`;
  }
}

/** The status screen as text (pure, for tests). */
export function renderStatus(agent: Pick<Agent, "version" | "config" | "apiUrl" | "session" | "tunnels">, width = 80): string {
  const status = agent.session.status;
  const rows: Array<[string, string]> = [
    ["Session Status", sessionLabel(status)],
    ["Session", status.sessionId ?? "-"],
    ["Agent Version", agent.version],
    ["Region", status.region ?? "-"],
    ["Latency", status.latencyMs === undefined ? "-" : `${status.latencyMs}ms`],
    ["Edge", agent.config.server_addr],
    ["Web Interface", agent.apiUrl ?? "off"],
  ];
  const tunnels = agent.tunnels.list();
  for (const tunnel of tunnels) rows.push(["Forwarding", forwarding(tunnel)]);
  if (tunnels.length === 0) rows.push(["Forwarding", "(no tunnels: POST /api/tunnels to start one)"]);
  const title = "Tollgate agent";
  const hint = "(Ctrl+C to quit)";
  const lines = [`${title}${" ".repeat(Math.max(1, width - title.length - hint.length))}${hint}`, ""];
  for (const [label, value] of rows) lines.push(pad(label, 30) + value);
  lines.push("", pad("Connections", 30) + ["ttl", "opn", "rt1", "rt5", "p50", "p90"].map((h) => pad(h, 8)).join(""));
  for (const tunnel of tunnels) {
    const { conns, http } = tunnel.metrics.snapshot();
    const seconds = (ns: number) => (ns / 1e9).toFixed(2);
    const cells = [String(conns.count), String(conns.gauge), conns.rate1.toFixed(2), conns.rate5.toFixed(2), seconds(http.p50), seconds(http.p90)];
    lines.push(pad(`  ${tunnel.name}`, 30) + cells.map((cell) => pad(cell, 8)).join(""));
  }
  return lines.map((line) => (line.length > width ? line.slice(0, width - 1) + "…" : line)).join("\n") + "\n";
}

function forwarding(tunnel: Tunnel): string {
  const target = tunnel.addr;
  switch (tunnel.state) {
    case "online":
      return tunnel.publicUrl ? `${tunnel.publicUrl} -> ${target}` : `labels ${JSON.stringify(tunnel.definition.labels)} -> ${target}`;
    case "starting":
      return `(starting ${tunnel.name}) -> ${target}`;
    case "offline":
      return `(offline ${tunnel.name}${tunnel.publicUrl ? ` ${tunnel.publicUrl}` : ""}) -> ${target}`;
    case "failed":
      return `(failed ${tunnel.name}: ${tunnel.error ?? "?"}) -> ${target}`;
    case "stopped":
      return `(stopped ${tunnel.name}) -> ${target}`;
  }
}

/** Shows the live status screen on `stream` until the returned function is called (which restores the terminal). */
export function showStatus(agent: Agent, stream: StatusStream): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const draw = () => {
    timer = undefined;
    stream.write(`\x1b[H\x1b[2J${renderStatus(agent, stream.columns || 80)}`);
  };
  const soon = () => {
    timer ??= setTimeout(draw, 100);
  };
  stream.write("\x1b[?1049h\x1b[?25l");
  draw();
  const ticker = setInterval(draw, 1000);
  const offStatus = agent.session.onStatus(soon);
  const offTunnels = agent.tunnels.onChange(soon);
  return () => {
    clearInterval(ticker);
    clearTimeout(timer);
    offStatus();
    offTunnels();
    stream.write("\x1b[?25h\x1b[?1049l");
  };
}
