/**
 * The status screen as lines (pure, for tests): session, forwarding, connection counts and rates, and the
 * recent HTTP requests, laid out for the terminal's width and height. A public URL is never cut: when it
 * does not fit beside its label it moves to a line of its own.
 */

import type { Agent } from "../agent.ts";
import type { SessionStatus } from "../edge/edge-session.ts";
import type { Tunnel } from "../tunnels/tunnel-manager.ts";
import type { RecentRequest } from "./recent-requests.ts";
import { cell, fit, paint, plain, span, type Line, type Span, type Style } from "./terminal-text.ts";

export type StatusAgent = Pick<Agent, "version" | "config" | "apiUrl" | "session" | "tunnels">;

export interface ScreenOptions {
  /** Terminal columns (default 80). */
  readonly width?: number;
  /** Terminal rows: the request list gets what is left (default: room for 10 requests). */
  readonly height?: number;
  readonly colour?: boolean;
  /** Newest first. */
  readonly requests?: readonly RecentRequest[];
  readonly now?: () => number;
}

/** Requests listed when the terminal's height is unknown. */
const DEFAULT_REQUEST_ROWS = 10;

const SESSION_STYLE: Record<SessionStatus["state"], Style> = { online: "green", connecting: "yellow", reconnecting: "yellow", refused: "red", closed: "red" };

function sessionSpans(status: SessionStatus, now: number): Span[] {
  const parts: Span[] = [span(status.state, SESSION_STYLE[status.state])];
  if ((status.state === "connecting" || status.state === "reconnecting") && status.nextAttemptAt) {
    parts.push(span(` (retry in ${Math.max(0, Math.ceil((status.nextAttemptAt.getTime() - now) / 1000))}s)`));
  }
  if (status.state !== "online" && status.lastError) parts.push(span(`: ${status.lastError}`));
  return parts;
}

/**
 * The Forwarding line(s) of one tunnel: its state when not online, the public URL whole (on a line of its
 * own when it does not fit beside the label), and the local address, named when there are several tunnels.
 */
function forwardingLines(tunnel: Tunnel, label: string, labelWidth: number, width: number, named: boolean): Line[] {
  const arrow = [span(`-> ${tunnel.addr}`), ...(named ? [span(` (${tunnel.name})`, "dim")] : [])];
  const state: Record<Tunnel["state"], Span[]> = {
    online: [],
    starting: [span("starting…", "yellow")],
    offline: [span("offline", "yellow")],
    failed: [span(`failed: ${tunnel.error ?? "?"}`, "red")],
    stopped: [span("stopped", "dim")],
  };
  const url = tunnel.state === "online" && !tunnel.publicUrl ? `labels ${JSON.stringify(tunnel.definition.labels)}` : tunnel.publicUrl;
  const shown = url && tunnel.state !== "failed" ? [span(url, tunnel.state === "online" ? "bold" : undefined)] : [];
  const first = [...state[tunnel.state], ...(state[tunnel.state].length && shown.length ? [span(" ")] : []), ...shown];
  const head = span(cell(label, labelWidth));
  const indent = span(" ".repeat(labelWidth));
  const one = [head, ...first, ...(first.length ? [span(" ")] : []), ...arrow];
  if (plain(one).length <= width || shown.length === 0) return [fit(one, width)];
  if (labelWidth + plain(first).length <= width) return [[head, ...first], fit([indent, ...arrow], width)];
  return [[span(label)], first, fit([indent, ...arrow], width)];
}

function statusStyle(request: RecentRequest): Style {
  if (request.state === "failed") return "red";
  if (request.statusCode === undefined) return "dim";
  return request.statusCode >= 500 ? "red" : request.statusCode >= 400 ? "yellow" : request.statusCode >= 300 ? "cyan" : "green";
}

function statusWords(request: RecentRequest, wide: boolean): string {
  if (request.state === "failed" && request.statusCode === undefined)
    return wide ? `failed ${(request.errorCode ?? "").replace(/^upstream_/, "")}`.trim() : "failed";
  if (request.statusCode === undefined) return "…";
  return wide && request.statusText ? `${request.statusCode} ${request.statusText}` : String(request.statusCode);
}

function clock(date: Date, millis: boolean): string {
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  return millis ? `${time}.${String(date.getMilliseconds()).padStart(3, "0")}` : time;
}

function duration(ns: bigint | undefined): string {
  if (ns === undefined) return "";
  const ms = Number(ns) / 1e6;
  return ms < 1000 ? `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

const pathOf = (request: RecentRequest) =>
  `${request.replay ? "↻ " : ""}${request.atEdge ? `[edge ${request.atEdge}] ` : ""}${request.path}${request.moreLikeIt ? ` (+${request.moreLikeIt.toLocaleString("en-US")} more like it)` : ""}`;

/**
 * Characters of path on each request line: as wide as the longest path shown needs (at least 20), at most
 * what the other columns leave.
 */
function pathColumn(requests: readonly RecentRequest[], width: number, tunnelWidth: number): number {
  const wide = width >= 80;
  const fixed = (wide ? 12 : 8) + 1 + 8 + (wide ? 20 : 7) + 1 + 8 + (tunnelWidth ? tunnelWidth + 1 : 0);
  const room = Math.max(8, width - fixed - 1);
  return Math.min(room, Math.max(20, ...requests.map((request) => pathOf(request).length)));
}

/** One request line: time, method, path, status, duration, and the tunnel when there are several. */
function requestLine(request: RecentRequest, width: number, pathWidth: number, tunnelWidth: number): Line {
  const wide = width >= 80;
  const statusWidth = wide ? 20 : 7;
  const time = clock(request.start, wide);
  const path = pathOf(request);
  const parts: Span[] = [
    span(`${time} `, "dim"),
    span(`${cell(request.method, 7)} `),
    span(`${cell(path, pathWidth)} `),
    span(cell(statusWords(request, wide), statusWidth), statusStyle(request)),
    span(` ${cell(duration(request.durationNs), 8)}`),
  ];
  if (tunnelWidth) parts.push(span(` ${cell(request.tunnelName, tunnelWidth)}`, "dim"));
  return fit(parts, width);
}

/** The screen's lines, without colour codes unless `colour`. */
export function renderStatusLines(agent: StatusAgent, options: ScreenOptions = {}): string[] {
  const width = Math.max(20, options.width || 80);
  const now = (options.now ?? Date.now)();
  const labelWidth = width >= 100 ? 30 : 17;
  const status = agent.session.status;
  const lines: Line[] = [];
  const row = (label: string, value: Span[]) => lines.push(fit([span(cell(label, labelWidth)), ...value], width));

  const title = "Tollgate agent";
  const hint = "(Ctrl+C to quit)";
  lines.push(fit([span(title, "bold"), span(" ".repeat(Math.max(1, width - title.length - hint.length))), span(hint, "dim")], width), []);
  row("Session Status", sessionSpans(status, now));
  row("Session", [span(status.sessionId ?? "-")]);
  row("Agent Version", [span(agent.version)]);
  row("Region", [span(status.region ?? "-")]);
  row("Latency", [span(status.latencyMs === undefined ? "-" : `${status.latencyMs}ms`)]);
  row("Edge", [span(agent.config.server_addr)]);
  row("Web Interface", [span(agent.apiUrl ?? "off")]);
  const tunnels = agent.tunnels.list();
  // With several tunnels each Forwarding line names its tunnel, so the URLs can be told apart.
  for (const tunnel of tunnels) lines.push(...forwardingLines(tunnel, "Forwarding", labelWidth, width, tunnels.length > 1));
  if (tunnels.length === 0) row("Forwarding", [span("(no tunnels: POST /api/tunnels to start one)", "dim")]);

  const column = width >= 80 ? 8 : 7;
  lines.push(
    [],
    fit([span(cell("Connections", labelWidth)), span(["ttl", "opn", "rt1", "rt5", "p50", "p90"].map((h) => cell(h, column)).join(""), "dim")], width),
  );
  for (const tunnel of tunnels) {
    const { conns, http } = tunnel.metrics.snapshot();
    const seconds = (ns: number) => (ns / 1e9).toFixed(2);
    const cells = [String(conns.count), String(conns.gauge), conns.rate1.toFixed(2), conns.rate5.toFixed(2), seconds(http.p50), seconds(http.p90)];
    lines.push(fit([span(cell(`  ${tunnel.name}`, labelWidth)), span(cells.map((text) => cell(text, column)).join(""))], width));
  }

  const requests = options.requests ?? [];
  const heading: Line[] = [[], [span("HTTP Requests", "bold")], [span("-------------")], []];
  const room = options.height === undefined ? DEFAULT_REQUEST_ROWS : options.height - lines.length - heading.length;
  if (room > 0) {
    lines.push(...heading);
    if (requests.length === 0) lines.push([span("(none yet)", "dim")]);
    const names = new Set(tunnels.map((tunnel) => tunnel.name));
    for (const request of requests) names.add(request.tunnelName);
    const tunnelWidth = names.size > 1 ? Math.min(12, Math.max(...[...names].map((name) => name.length))) : 0;
    const shown = requests.slice(0, room);
    const pathWidth = pathColumn(shown, width, tunnelWidth);
    for (const request of shown) lines.push(requestLine(request, width, pathWidth, tunnelWidth));
  }
  return lines.map((line) => paint(line, options.colour === true));
}

/** The status screen as text (pure, for tests). */
export function renderStatus(agent: StatusAgent, options: ScreenOptions = {}): string {
  return `${renderStatusLines(agent, options).join("\n")}\n`;
}
