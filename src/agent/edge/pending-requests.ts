/** The agent's requests to the edge awaiting their answer frame (start_tunnel, stop_tunnel), each with a deadline. */

import type { Frame } from "../../relay/frames.ts";
import { EdgeRefusal } from "./session-status.ts";

interface Pending {
  resolve(frame: Frame): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

export class PendingRequests {
  private readonly pending = new Map<number, Pending>();
  private lastId = 0;

  /** Sends the request `build` makes with a fresh id; resolves with its answer, or rejects after `timeoutMs`. */
  start(build: (requestId: number) => Frame, send: (frame: Frame) => void, timeoutMs: number): Promise<Frame> {
    const requestId = ++this.lastId;
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(new EdgeRefusal("timeout", `the edge did not answer within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(requestId, { resolve, reject, timer });
      send(build(requestId));
    });
  }

  has(requestId: number): boolean {
    return this.pending.has(requestId);
  }

  /** The answer to request `requestId` arrived. */
  settle(requestId: number, frame: Frame): void {
    const pending = this.pending.get(requestId);
    if (!pending) return;
    this.pending.delete(requestId);
    clearTimeout(pending.timer);
    pending.resolve(frame);
  }

  /** The connection is gone: no answer will come. */
  rejectAll(reason: string): void {
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new EdgeRefusal("disconnected", `the connection to the edge was lost: ${reason}`));
      this.pending.delete(id);
    }
  }
}
