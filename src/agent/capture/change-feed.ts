/**
 * Store changes batched for a live view (the inspector's event stream): changes within `intervalMs` are
 * merged — an exchange updated ten times is sent once, in its latest state — and a batch waits while the
 * previous one is still being written, so a slow reader costs at most one batch per exchange kept.
 */

import type { CaptureStore } from "./capture-store.ts";
import type { CapturedExchange } from "./captured-exchange.ts";
import { captureSummary, type CapturedRequestSummary } from "./view.ts";

export interface ChangeBatch {
  /** Everything before this batch is gone. */
  clear: boolean;
  remove: string[];
  /** New or changed (ids sort by age). */
  upsert: CapturedRequestSummary[];
}

export interface ChangeFeedOptions {
  readonly intervalMs?: number;
}

/** Calls `send` with batches until the returned function is called. */
export function subscribeChanges(
  store: CaptureStore,
  send: (batch: ChangeBatch) => Promise<void> | void,
  { intervalMs = 100 }: ChangeFeedOptions = {},
): () => void {
  let clear = false;
  const removed = new Set<string>();
  const upserts = new Map<string, CapturedExchange>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing = false;
  let stopped = false;

  const flush = async () => {
    timer = undefined;
    if (stopped) return;
    if (writing) return schedule();
    const batch: ChangeBatch = { clear, remove: [...removed], upsert: [...upserts.values()].filter((exchange) => !exchange.evicted).map(captureSummary) };
    clear = false;
    removed.clear();
    upserts.clear();
    writing = true;
    try {
      await send(batch);
    } finally {
      writing = false;
    }
  };
  const schedule = () => {
    timer ??= setTimeout(() => void flush().catch(() => undefined), intervalMs);
  };

  const off = store.onChange((change) => {
    switch (change.type) {
      case "clear":
        clear = true;
        removed.clear();
        upserts.clear();
        break;
      case "remove":
        for (const id of change.ids) {
          upserts.delete(id);
          removed.add(id);
        }
        break;
      default:
        upserts.set(change.exchange.id, change.exchange);
    }
    schedule();
  });
  return () => {
    stopped = true;
    off();
    if (timer) clearTimeout(timer);
  };
}
