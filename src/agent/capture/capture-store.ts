/**
 * The captured-request store: every HTTP exchange of a tunnel with `inspect: true`, in memory, oldest
 * evicted first once what they retain passes `maxBytes` (`inspect_db_size`). Each exchange is charged its
 * retained size (retained-size.ts), not just its characters, so the bound holds for the agent's heap.
 * Each body is kept up to `bodyCapBytes` and marked truncated past it. Listeners hear of additions,
 * updates and removals.
 */

import type { ExchangeInfo, ExchangeObserver, ExchangeTap, ResponseHeadInfo } from "../edge/exchange.ts";
import { BodyBuffer } from "./body-buffer.ts";
import { CapturedExchange } from "./captured-exchange.ts";
import { HeaderBlock } from "./header-block.ts";
import { protoOf, statusText } from "./http-message.ts";
import { captureIdFactory } from "./ids.ts";

/** Bytes of each body (request and response separately) kept per exchange. */
export const DEFAULT_BODY_CAP_BYTES = 1024 * 1024;

export type CaptureChange =
  | { readonly type: "add" | "update"; readonly exchange: CapturedExchange }
  | { readonly type: "remove"; readonly ids: readonly string[] }
  | { readonly type: "clear" };

export interface CaptureStoreOptions {
  /** The size bound (`inspectDbBytes(config)`). */
  readonly maxBytes: number;
  /** Per body; at most a quarter of maxBytes, so one exchange never fills the store alone. */
  readonly bodyCapBytes?: number;
  readonly now?: () => number;
}

export interface ListOptions {
  readonly limit: number;
  readonly tunnelName?: string;
}

export class CaptureStore {
  readonly maxBytes: number;
  readonly bodyCapBytes: number;
  /** Oldest first: a Map iterates in insertion order. */
  private readonly entries = new Map<string, CapturedExchange>();
  private readonly listeners = new Set<(change: CaptureChange) => void>();
  private readonly nextId: () => string;
  private total = 0;
  private replayOf: string | undefined;

  readonly tap: ExchangeTap = { open: (info) => this.open(info) };

  constructor(options: CaptureStoreOptions) {
    if (!(options.maxBytes > 0)) throw new Error(`maxBytes must be positive, got ${options.maxBytes}`);
    this.maxBytes = options.maxBytes;
    this.bodyCapBytes = Math.max(0, Math.min(options.bodyCapBytes ?? DEFAULT_BODY_CAP_BYTES, Math.floor(options.maxBytes / 4)));
    this.nextId = captureIdFactory(options.now);
  }

  /** Bytes charged for everything kept. */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  get(id: string): CapturedExchange | undefined {
    return this.entries.get(id);
  }

  /** Newest first. */
  list({ limit, tunnelName }: ListOptions): CapturedExchange[] {
    const all = [...this.entries.values()];
    const found: CapturedExchange[] = [];
    for (let i = all.length - 1; i >= 0 && found.length < limit; i--) {
      if (tunnelName === undefined || all[i].tunnelName === tunnelName) found.push(all[i]);
    }
    return found;
  }

  clear(): void {
    for (const entry of this.entries.values()) this.drop(entry);
    this.entries.clear();
    this.total = 0;
    this.emit({ type: "clear" });
  }

  onChange(listener: (change: CaptureChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  /**
   * Runs `send` (which must open its exchange synchronously, as `sendToLocal` does) so that the replay it
   * starts is recorded as a replay of `id`.
   */
  replaying<T>(id: string, send: () => T): T {
    this.replayOf = id;
    try {
      return send();
    } finally {
      this.replayOf = undefined;
    }
  }

  private open(info: ExchangeInfo): ExchangeObserver | undefined {
    if (!info.inspect) return undefined;
    const exchange = new CapturedExchange(
      this.nextId(),
      info.tunnelName,
      info.remoteAddr,
      info.start,
      info.startNs,
      { method: info.method, proto: "HTTP/1.1", target: info.target, headers: HeaderBlock.of(info.headers), body: new BodyBuffer(this.bodyCapBytes) },
      info.replay ? this.replayOf : undefined,
      info.rateLimits || info.atEdge ? { rateLimits: info.rateLimits ?? [], ...(info.atEdge ? { atEdge: info.atEdge } : {}) } : undefined,
    );
    this.entries.set(exchange.id, exchange);
    this.emit({ type: "add", exchange });
    this.charge(exchange);

    return {
      onRequestBody: (chunk) => {
        if (exchange.evicted) return;
        exchange.request.body.add(chunk);
        this.charge(exchange);
      },
      onResponseHead: (head) => {
        if (!exchange.evicted) this.respond(exchange, head);
      },
      onResponseBody: (chunk) => {
        if (exchange.evicted || !exchange.response) return;
        exchange.response.body.add(chunk);
        this.charge(exchange);
      },
      onClose: (outcome) => {
        exchange.durationNs = outcome.durationNs;
        if (outcome.error) exchange.error = outcome.error;
        exchange.state = exchange.error ? "failed" : "complete";
        if (exchange.evicted) return;
        exchange.request.body.seal();
        exchange.response?.body.seal();
        this.emit({ type: "update", exchange });
        this.charge(exchange);
      },
    };
  }

  private respond(exchange: CapturedExchange, head: ResponseHeadInfo): void {
    const status = statusText(head.status, head.statusText);
    exchange.response = {
      statusCode: head.status,
      status,
      proto: protoOf(head.httpVersion),
      headers: HeaderBlock.of(head.headers),
      body: new BodyBuffer(this.bodyCapBytes),
    };
    this.emit({ type: "update", exchange });
    this.charge(exchange);
  }

  /** Brings the exchange's charge up to date with what it retains now, and evicts if the total passed the bound. */
  private charge(exchange: CapturedExchange): void {
    const bytes = exchange.retainedBytes();
    if (bytes === exchange.bytes) return;
    this.total += bytes - exchange.bytes;
    exchange.bytes = bytes;
    this.evict();
  }

  /** Oldest first, until the total is within the bound (the newest too, if it alone were past it). */
  private evict(): void {
    if (this.total <= this.maxBytes) return;
    const removed: string[] = [];
    for (const entry of this.entries.values()) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(entry.id);
      this.total -= entry.bytes;
      this.drop(entry);
      removed.push(entry.id);
    }
    this.emit({ type: "remove", ids: removed });
  }

  private drop(entry: CapturedExchange): void {
    entry.evicted = true;
    entry.request.body.release();
    entry.response?.body.release();
  }

  private emit(change: CaptureChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (error) {
        console.error("tollgate agent: a capture listener failed:", error);
      }
    }
  }
}
