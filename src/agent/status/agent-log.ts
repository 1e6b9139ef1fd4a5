/**
 * The agent's log: one record per session or tunnel change, in logfmt, JSON or term, to stdout, stderr or
 * a file. Besides Tollgate's own messages it writes the lines ngrok's clients wait for (the `ngrok` npm
 * package and pyngrok parse them): "starting web service" with `addr=<ipv4>:<port>`, "client session
 * established", "tunnel session started", "started tunnel", "session closed, starting reconnect loop",
 * "failed to reconnect session".
 */

import { createWriteStream } from "node:fs";
import { resolve } from "node:path";
import type { Agent } from "../agent.ts";
import type { LOG_FORMATS, LOG_LEVELS } from "../settings/schema.ts";

export type LogFormat = (typeof LOG_FORMATS)[number];
export type LogLevel = (typeof LOG_LEVELS)[number];
type Fields = Record<string, string | number | undefined>;

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, crit: 4 };

/** One record as a line: logfmt (and term, its plain-text twin) quotes values with spaces or quotes; json is one object. */
export function formatRecord(format: LogFormat, level: LogLevel, msg: string, fields: Fields = {}, now = new Date()): string {
  const defined = Object.entries(fields).filter((entry): entry is [string, string | number] => entry[1] !== undefined);
  if (format === "json") return `${JSON.stringify({ t: now.toISOString(), lvl: level, msg, ...Object.fromEntries(defined) })}\n`;
  const quote = (value: string) => (/[\s"=]/.test(value) || value === "" ? JSON.stringify(value) : value);
  const parts = [`t=${now.toISOString()}`, `lvl=${level}`, `msg=${quote(msg)}`];
  for (const [key, value] of defined) parts.push(`${key}=${quote(String(value))}`);
  return `${parts.join(" ")}\n`;
}

export interface LogTarget {
  write(text: string): unknown;
}

export interface AgentLog {
  write(level: LogLevel, msg: string, fields?: Fields): void;
  /** Flushes and closes a log file (stdout and stderr stay open). */
  close(): Promise<void>;
}

export interface LogOptions {
  /** stdout, stderr, or a file path (relative to `cwd`). */
  readonly destination: string;
  readonly format: LogFormat;
  readonly level: LogLevel;
  readonly stdout: LogTarget;
  readonly stderr: LogTarget;
  readonly cwd: string;
  /** The program's name for its one message on stderr (`tollgate`, or `ngrok` when started as ngrok). */
  readonly program: string;
}

/** Opens the log; a file is appended to, as ngrok does. */
export function openLog({ destination, format, level, stdout, stderr, cwd, program }: LogOptions): AgentLog {
  const file = destination === "stdout" || destination === "stderr" ? undefined : createWriteStream(resolve(cwd, destination), { flags: "a" });
  const target: LogTarget = destination === "stdout" ? stdout : destination === "stderr" ? stderr : file!;
  // A log file that cannot be written must not crash the agent; the first error is said once on stderr.
  let failed = false;
  file?.on("error", (error) => {
    if (!failed) stderr.write(`${program}: cannot write the log file ${resolve(cwd, destination)}: ${error.message}\n`);
    failed = true;
  });
  return {
    write(recordLevel, msg, fields) {
      if (RANK[recordLevel] >= RANK[level] && !failed) target.write(formatRecord(format, recordLevel, msg, fields));
    },
    close: () => (file ? new Promise<void>((done) => file.end(() => done())) : Promise.resolve()),
  };
}

/** The API's address as ngrok logs it (`127.0.0.1:4040`), from its URL. */
export function webAddrOf(apiUrl: string): string {
  return new URL(apiUrl).host;
}

/** Writes the agent's changes to `log` until the returned function is called. */
export function logAgent(agent: Agent, log: AgentLog): () => void {
  if (agent.apiUrl)
    log.write("info", "starting web service", { obj: "web", addr: webAddrOf(agent.apiUrl), allow_hosts: agent.config.web_allow_hosts.join(",") || undefined });

  let lastState = "";
  let lastError: string | undefined;
  const offStatus = agent.session.onStatus((status) => {
    const changed = status.state !== lastState;
    const newError = status.lastError !== undefined && status.lastError !== lastError;
    const previous = lastState;
    lastState = status.state;
    lastError = status.lastError;
    if (status.state === "online") {
      if (!changed) return;
      log.write("info", "client session established", { obj: "tunnels.session", id: status.sessionId, region: status.region });
      log.write("info", "tunnel session started", { obj: "tunnels.session" });
      log.write("info", "session online", { id: status.sessionId, region: status.region, edge: agent.config.server_addr, api: agent.apiUrl });
    } else if (status.state === "refused") {
      if (changed) log.write("error", "edge refused the agent", { err: status.lastError });
    } else if (status.state === "connecting" || status.state === "reconnecting") {
      if (previous === "online") log.write("info", "session closed, starting reconnect loop", { obj: "tunnels.session", err: status.lastError });
      else if (newError) log.write("error", "failed to reconnect session", { obj: "tunnels.session", err: status.lastError });
      if (changed || newError) {
        const retry = status.nextAttemptAt ? `${((status.nextAttemptAt.getTime() - Date.now()) / 1000).toFixed(1)}s` : undefined;
        log.write("warn", `session ${status.state}`, { err: status.lastError, retry_in: retry });
      }
    }
  });
  const lastTunnel = new Map<string, string>();
  const offTunnels = agent.tunnels.onChange((tunnel) => {
    const key = `${tunnel.state} ${tunnel.publicUrl ?? ""}`;
    if (lastTunnel.get(tunnel.name) === key) return;
    lastTunnel.set(tunnel.name, key);
    if (tunnel.state === "online") {
      log.write("info", "started tunnel", { obj: "tunnels", name: tunnel.name, addr: tunnel.addr, url: tunnel.publicUrl });
      log.write("info", "tunnel online", { name: tunnel.name, url: tunnel.publicUrl, addr: tunnel.addr, id: tunnel.id });
    } else if (tunnel.state === "failed") log.write("error", "tunnel failed", { name: tunnel.name, err: tunnel.error });
    else if (tunnel.state === "offline") log.write("warn", "tunnel offline", { name: tunnel.name, err: tunnel.error });
    else if (tunnel.state === "stopped") log.write("info", "tunnel stopped", { name: tunnel.name, url: tunnel.publicUrl });
  });
  return () => {
    offStatus();
    offTunnels();
  };
}
