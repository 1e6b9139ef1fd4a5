/**
 * What captured data costs in memory, so the store charges what it retains and `inspect_db_size` bounds
 * the agent's memory, not just the characters and body bytes it was sent. Measured on Node 20 x64 (V8
 * 11.3, no pointer compression) as heapUsed + arrayBuffers after a full GC; test/agent/capture.test.ts
 * checks the whole against a real heap.
 */

const WIDE = /[^\x00-\xff]/;

/** A sequential string's header (map, hash, length); objects are 8-byte aligned. */
const STRING_HEADER_BYTES = 16;

/**
 * A Uint8Array with an ArrayBuffer of its own, besides its bytes: 184 measured (the two objects); the
 * backing store's record outside the heap, which memoryUsage() does not show, rounds it up.
 */
export const TYPED_ARRAY_BYTES = 256;

/**
 * An exchange besides its strings, header blocks and bodies: the exchange and request objects, the start
 * Date (112 alone), two bigints, the id, and its slot in the store's Map (whose table keeps holes until it
 * is rebuilt). Measured: about 500.
 */
export const EXCHANGE_BYTES = 640;
/** A response besides its status text, header block and body: the object, its proto string. Measured: about 350 with its body buffer. */
export const RESPONSE_BYTES = 384;
/** How an exchange failed besides the two strings: the object. */
export const ERROR_BYTES = 48;

/** What V8 holds for a string: one byte per character when all are Latin-1, else two (UTF-16). */
export function stringBytes(text: string): number {
  const bytes = STRING_HEADER_BYTES + text.length * (WIDE.test(text) ? 2 : 1);
  return Math.ceil(bytes / 8) * 8;
}
