/**
 * Logs expressions that fail at request time (an absent header indexed, a run-time budget spent), those
 * gating entries and those interpolated into action fields (`${…}`), without
 * turning traffic into a log flood: at most one line per expression per second, carrying how many failures
 * of it went unlogged since, and at most MAX_ERROR_LINES_PER_SECOND lines a second from the whole isolate.
 * Pure: the clock and the writer are injected; memory is bounded by expressions remembered.
 */

import type { InterpolationLog } from "./exchange.ts";
import { makeRoom } from "../bounded-map.ts";

/** Lines one expression may write per second. */
export const ERROR_LOG_INTERVAL_MS = 1000;
/** Lines the isolate writes per second for all expressions together. */
export const MAX_ERROR_LINES_PER_SECOND = 20;
/** Expressions remembered (keyed by their compiled entry or action field and text; least recently used forgotten first). */
export const MAX_REMEMBERED_EXPRESSIONS = 1024;
/** Characters of each of the expression, the entry's name and the error in a line (errors may quote request data). */
export const MAX_ERROR_FIELD_CHARS = 256;

const clip = (text: string) => (text.length > MAX_ERROR_FIELD_CHARS ? `${text.slice(0, MAX_ERROR_FIELD_CHARS)}…` : text);

export interface ExpressionErrorLogOptions {
  readonly now?: () => number;
  readonly write?: (line: string) => void;
}

interface Memory {
  lastAt: number;
  suppressed: number;
}

/** Where a failing expression is reported (runPhase in evaluate.ts); `entry`: its compiled entry, by identity. */
export interface EvaluationLog {
  expressionError(entry: { readonly name?: string }, source: string, message: string): void;
}

export class ExpressionErrorLog implements EvaluationLog, InterpolationLog {
  private readonly now: () => number;
  private readonly write: (line: string) => void;
  /** Per entry (a compiled policy's object, so a policy dropped from its cache is forgotten with it), per source. */
  private readonly memories = new Map<string, Memory>();
  private readonly ids = new WeakMap<object, number>();
  private nextId = 0;
  private second = -1;
  private linesThisSecond = 0;

  constructor({ now = Date.now, write = (line) => console.warn(line) }: ExpressionErrorLogOptions = {}) {
    this.now = now;
    this.write = write;
  }

  expressionError(entry: { readonly name?: string }, source: string, message: string): void {
    const where = entry.name ? ` of entry ${JSON.stringify(clip(entry.name))}` : "";
    this.report(
      entry,
      source,
      (since) => `traffic policy: expression ${JSON.stringify(clip(source))}${where} failed (${clip(message)}); the entry is skipped${since}`,
    );
  }

  interpolationError(field: object, where: string, source: string, message: string): void {
    this.report(
      field,
      source,
      (since) => `traffic policy: \${${clip(source)}} in ${clip(where)} failed (${clip(message)}); it is written as empty text${since}`,
    );
  }

  /** A rate-limit's settle_cost that settled nothing for one response: the request's estimate stays. */
  settleError(owner: object, source: string, message: string): void {
    this.report(owner, source, (since) => `traffic policy: settle_cost ${JSON.stringify(clip(source))} failed (${clip(message)}); the estimate stays${since}`);
  }

  /** Writes `line` unless this expression wrote one within the interval or the isolate is at its lines a second. */
  private report(owner: object, source: string, line: (since: string) => string): void {
    const now = this.now();
    const key = `${this.idOf(owner)}\u0000${source}`;
    const memory = this.memories.get(key);
    if (memory && now - memory.lastAt < ERROR_LOG_INTERVAL_MS) {
      memory.suppressed++;
      return;
    }
    const second = Math.floor(now / 1000);
    if (second !== this.second) {
      this.second = second;
      this.linesThisSecond = 0;
    }
    if (this.linesThisSecond >= MAX_ERROR_LINES_PER_SECOND) {
      // counted with this expression's next line, even if it has not written one yet
      const counted = memory ?? { lastAt: Number.NEGATIVE_INFINITY, suppressed: 0 };
      counted.suppressed++;
      this.remember(key, counted);
      return;
    }
    this.linesThisSecond++;
    const suppressed = memory?.suppressed ?? 0;
    this.remember(key, { lastAt: now, suppressed: 0 });
    this.write(line(suppressed > 0 ? ` (and ${suppressed} more times since its last line)` : ""));
  }

  private idOf(owner: object): number {
    let id = this.ids.get(owner);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(owner, id);
    }
    return id;
  }

  private remember(key: string, memory: Memory): void {
    this.memories.delete(key);
    makeRoom(this.memories, MAX_REMEMBERED_EXPRESSIONS);
    this.memories.set(key, memory);
  }
}
