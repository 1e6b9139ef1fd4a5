/**
 * The live status screen on a terminal: the alternate screen, redrawn in place (each line over the last, so
 * it does not flicker) on every change, every second, and when the terminal is resized. The lines are
 * status-screen.ts; the recent requests come from a tap on every tunnel. Log lines are agent-log.ts.
 */

import type { Agent } from "../agent.ts";
import { RecentRequests } from "./recent-requests.ts";
import { renderStatusLines } from "./status-screen.ts";
import { colourWanted, type ColourStream } from "./terminal-text.ts";

export interface StatusStream extends ColourStream {
  write(text: string): unknown;
  readonly columns?: number;
  readonly rows?: number;
  on?(event: "resize", listener: () => void): unknown;
  off?(event: "resize", listener: () => void): unknown;
}

export interface StatusOptions {
  /** The environment (NO_COLOR, FORCE_COLOR, TERM decide about colour). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Shows the live status screen on `stream` until the returned function is called (which restores the terminal). */
export function showStatus(
  agent: Pick<Agent, "version" | "config" | "apiUrl" | "session" | "tunnels">,
  stream: StatusStream,
  { env = {} }: StatusOptions = {},
): () => void {
  const recent = new RecentRequests();
  agent.tunnels.addTap(recent.tap);
  const colour = colourWanted(stream, env);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const draw = () => {
    clearTimeout(timer);
    timer = undefined;
    const lines = renderStatusLines(agent, { width: stream.columns || 80, height: stream.rows || undefined, colour, requests: recent.list() });
    // Home, then each line followed by erase-to-end-of-line, then erase below: no blank frame in between.
    stream.write(`\x1b[H${lines.join("\x1b[K\r\n")}\x1b[K\x1b[J`);
  };
  const soon = () => {
    timer ??= setTimeout(draw, 100);
  };
  stream.write("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
  draw();
  const ticker = setInterval(draw, 1000);
  const offStatus = agent.session.onStatus(soon);
  const offTunnels = agent.tunnels.onChange(soon);
  const offRequests = recent.onChange(soon);
  // After a resize the terminal has reflowed the old frame: clear it before drawing over it.
  const resized = () => {
    stream.write("\x1b[2J");
    draw();
  };
  stream.on?.("resize", resized);
  return () => {
    clearInterval(ticker);
    clearTimeout(timer);
    offStatus();
    offTunnels();
    offRequests();
    recent.close();
    stream.off?.("resize", resized);
    stream.write("\x1b[?25h\x1b[?1049l");
  };
}
