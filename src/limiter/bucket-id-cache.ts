/**
 * One isolate's memory of bucket ids, so a busy bucket's requests skip the SHA-256 of `bucketId`: a map
 * from a short bucket name to its id. Names longer than `maxNameChars` are always hashed and never kept, so
 * a client sending long keys cannot make an entry larger than the bound; the whole map is bounded by bytes
 * (oldest entries forgotten first), and forgetting only costs a hash.
 */

import { bucketId, bucketText, idOfText, type BucketName } from "./bucket-id.ts";
import { freeBudget } from "../bounded-map.ts";

/** Longest bucket name (JSON text of its parts) whose id is remembered. */
export const MAX_CACHED_NAME_CHARS = 256;
/**
 * Default memory bound of the cache: as many ids as the isolate remembers buckets (BUCKET_MEMORY_BYTES holds
 * 16,384) at names of about 45 characters, so keys that come back every few seconds are not hashed each time.
 */
export const BUCKET_ID_CACHE_BYTES = 4 * 1024 * 1024;
/** Heap an entry costs besides its name: the Map slot, the 43-character id string and headers, rounded up. */
const ENTRY_OVERHEAD_BYTES = 160;

export interface BucketIdCacheOptions {
  readonly maxBytes?: number;
  readonly maxNameChars?: number;
}

export class BucketIdCache {
  private readonly maxBytes: number;
  private readonly maxNameChars: number;
  private readonly ids = new Map<string, string>();
  private bytes = 0;

  constructor({ maxBytes = BUCKET_ID_CACHE_BYTES, maxNameChars = MAX_CACHED_NAME_CHARS }: BucketIdCacheOptions = {}) {
    this.maxBytes = Math.max(0, maxBytes);
    this.maxNameChars = maxNameChars;
  }

  /** Names remembered right now. */
  get size(): number {
    return this.ids.size;
  }

  /** Heap the remembered names are counted as (at most `maxBytes`). */
  get usedBytes(): number {
    return this.bytes;
  }

  /** The bucket's id: at once when remembered, else hashed (and remembered when the name is short). */
  idOf(name: BucketName): string | Promise<string> {
    const text = bucketText(name);
    if (text.length > this.maxNameChars) return bucketId(name);
    const known = this.ids.get(text);
    if (known !== undefined) return known;
    return idOfText(text).then((id) => {
      this.remember(text, id);
      return id;
    });
  }

  private remember(text: string, id: string): void {
    if (this.ids.has(text)) return;
    // Two bytes a character: the bound holds whether V8 stores the name one- or two-byte.
    const cost = 2 * text.length + ENTRY_OVERHEAD_BYTES;
    if (cost > this.maxBytes) return;
    freeBudget(
      this.ids,
      cost,
      this.maxBytes,
      () => this.bytes,
      (oldest) => {
        this.ids.delete(oldest);
        this.bytes -= 2 * oldest.length + ENTRY_OVERHEAD_BYTES;
      },
    );
    this.ids.set(text, id);
    this.bytes += cost;
  }
}
