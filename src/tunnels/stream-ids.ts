/**
 * Stream ids of one tunnel session, never reused while a stream or a public WebSocket with that id lives.
 * The object holding the session can be evicted (hibernation) while relayed WebSockets stay open, so the
 * next id must survive it: ids are reserved from storage in blocks, and a rebuilt object starts after the
 * last reserved block. An id still in use (by a stream in memory or a hibernated socket) is skipped.
 */

import { MAX_STREAM_ID } from "../relay/index.ts";

/** Where the end of the reserved block is kept across evictions. */
export interface ReservationStore {
  read(): number | undefined;
  write(reservedUpTo: number): void;
}

/** Ids reserved per storage write: one write every this many streams. */
export const STREAM_ID_BLOCK = 1024;

export class StreamIds {
  private last: number;
  private reservedUpTo: number;

  constructor(
    private readonly store: ReservationStore,
    private readonly inUse: (id: number) => boolean,
  ) {
    this.last = this.reservedUpTo = store.read() ?? 0;
  }

  /** The next id that no live stream or socket holds. */
  allocate(): number {
    // At most every id is tried once; a session never holds anything near 2^32 streams at once.
    for (let tries = 0; tries < MAX_STREAM_ID; tries++) {
      if (this.last >= MAX_STREAM_ID) this.last = this.reservedUpTo = 0;
      const id = ++this.last;
      if (id > this.reservedUpTo) {
        this.reservedUpTo = Math.min(MAX_STREAM_ID, id + STREAM_ID_BLOCK - 1);
        this.store.write(this.reservedUpTo);
      }
      if (!this.inUse(id)) return id;
    }
    throw new Error("every stream id is in use");
  }
}
