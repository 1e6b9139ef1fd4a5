/**
 * Text for a terminal: lines as styled spans, cut to the terminal's width on their plain text (so colour
 * never changes the layout), painted with SGR colours only when the terminal takes them, and scrubbed of
 * control characters (paths and error texts come from the network; they must not drive the terminal).
 */

export type Style = "bold" | "dim" | "green" | "yellow" | "red" | "cyan" | "magenta";

export interface Span {
  readonly text: string;
  readonly style?: Style;
}

export type Line = readonly Span[];

const SGR: Record<Style, string> = { bold: "1", dim: "2", green: "32", yellow: "33", red: "31", cyan: "36", magenta: "35" };

/** C0 and C1 control characters and DEL: shown as "?" so no byte of captured text reaches the terminal as a command. */
const CONTROL = /[\x00-\x1f\x7f-\x9f]/g;

export const span = (text: string, style?: Style): Span => ({ text: text.replace(CONTROL, "?"), style });

export function plain(line: Line): string {
  return line.map((part) => part.text).join("");
}

/** Cuts the line to `width` characters, the last one "…" when something was cut. */
export function fit(line: Line, width: number): Line {
  if (plain(line).length <= width) return line;
  const out: Span[] = [];
  let room = Math.max(0, width - 1);
  for (const part of line) {
    if (room === 0) break;
    out.push({ text: part.text.slice(0, room), style: part.style });
    room -= Math.min(room, part.text.length);
  }
  out.push({ text: "…" });
  return out;
}

/** `text` padded with spaces to `width`, or cut with "…" when longer. */
export function cell(text: string, width: number): string {
  if (text.length > width) return width <= 1 ? text.slice(0, width) : `${text.slice(0, width - 1)}…`;
  return text + " ".repeat(width - text.length);
}

export function paint(line: Line, colour: boolean): string {
  return line.map((part) => (colour && part.style ? `\x1b[${SGR[part.style]}m${part.text}\x1b[0m` : part.text)).join("");
}

export interface ColourStream {
  readonly isTTY?: boolean;
  /** Node's `tty.WriteStream.hasColors` (it reads FORCE_COLOR, NO_COLOR, TERM and CI from `env`). */
  hasColors?(count?: number, env?: Readonly<Record<string, string | undefined>>): boolean;
}

/** Colour when the stream is a terminal that takes 16 colours, never when NO_COLOR is set to anything (no-color.org). */
export function colourWanted(stream: ColourStream, env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (stream.isTTY !== true || typeof stream.hasColors !== "function") return false;
  return stream.hasColors(16, env);
}
