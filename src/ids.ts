/** Resource ids: a prefix plus 27 base62 characters that sort by creation time. */

export const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ID_BODY_LENGTH = 27;
const RANDOM_BYTES = 14;

let lastMillis = 0;
let lastRandom: Uint8Array = new Uint8Array(RANDOM_BYTES);

/**
 * 20 bytes (48-bit millisecond time, 112 random bits) in base62, left-padded to 27 characters,
 * so string order is creation order. Within one millisecond the random part is incremented,
 * keeping ids made by one isolate strictly increasing.
 */
export function newId(prefix: string, now: number = Date.now()): string {
  let random: Uint8Array;
  if (now <= lastMillis) {
    now = lastMillis;
    random = increment(lastRandom);
  } else {
    random = crypto.getRandomValues(new Uint8Array(RANDOM_BYTES));
    random[0] &= 0x7f; // headroom so increments never overflow into the time part
  }
  lastMillis = now;
  lastRandom = random;

  let value = BigInt(now);
  for (const byte of random) value = (value << 8n) | BigInt(byte);
  let body = "";
  while (value > 0n) {
    body = BASE62[Number(value % 62n)] + body;
    value /= 62n;
  }
  return `${prefix}_${body.padStart(ID_BODY_LENGTH, "0")}`;
}

function increment(bytes: Uint8Array): Uint8Array {
  const next = bytes.slice();
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i] < 0xff) {
      next[i]++;
      return next;
    }
    next[i] = 0;
  }
  return next;
}

/** True when `id` has the given prefix and a well-formed body. */
export function isId(id: string, prefix: string): boolean {
  return new RegExp(`^${prefix}_[0-9A-Za-z]{${ID_BODY_LENGTH}}$`).test(id);
}
