/** Resource ids: a prefix plus 27 base62 characters that sort by creation time. */

export const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ID_BODY_LENGTH = 27;
const RANDOM_BYTES = 14;

/**
 * One isolate's id sequence: the last id's millisecond and body, and random bytes drawn ahead for ids of new
 * milliseconds (one getRandomValues call serves 64 of them).
 */
export class IdSequence {
  private lastMillis = 0;
  private lastBody = "";
  private readonly randomPool = new Uint8Array(64 * RANDOM_BYTES);
  private poolUsed = this.randomPool.length;

  /**
   * 20 bytes (48-bit millisecond time, 112 random bits) in base62, left-padded to 27 characters,
   * so string order is creation order. Within one millisecond the number is incremented instead,
   * keeping ids made by one isolate strictly increasing (and cheap: a flood's 429s each carry one).
   */
  next(prefix: string, now: number = Date.now()): string {
    if (now <= this.lastMillis) {
      this.lastBody = incrementBase62(this.lastBody);
    } else {
      const random = this.nextRandomBytes();
      random[0] &= 0x7f; // headroom so increments never overflow into the time part
      this.lastMillis = now;
      this.lastBody = encodeBase62(now, random);
    }
    return `${prefix}_${this.lastBody}`;
  }

  private nextRandomBytes(): Uint8Array {
    if (this.poolUsed === this.randomPool.length) {
      crypto.getRandomValues(this.randomPool);
      this.poolUsed = 0;
    }
    const random = this.randomPool.subarray(this.poolUsed, this.poolUsed + RANDOM_BYTES);
    this.poolUsed += RANDOM_BYTES;
    return random;
  }
}

/**
 * The isolate's one sequence. Module-level, unlike the memories of src/runtime.ts: ids are
 * made where no runtime is at hand (every error envelope's operation id, the Durable Objects), and ids of one
 * isolate sort in creation order only if they come from one sequence.
 */
const isolateIds = new IdSequence();

/** A new id from the isolate's sequence (see IdSequence.next). */
export function newId(prefix: string, now: number = Date.now()): string {
  return isolateIds.next(prefix, now);
}

/** 62⁴: four base62 digits per pass of the long division. */
const CHUNK = 62 ** 4;

/**
 * The 160-bit number (time << 112 | random) in base62, 27 digits, by long division over 24-bit limbs,
 * four digits a pass (remainder × 2²⁴ + limb stays below 2⁵³). A flood's 429s run it about once a millisecond.
 */
export function encodeBase62(millis: number, r: Uint8Array): string {
  // 168 bits in 7 limbs: the top limb holds the time's upper 16 bits (its top 8 bits are zero).
  const limbs = [
    Math.floor(millis / 2 ** 32) & 0xffff,
    Math.floor(millis / 2 ** 8) & 0xffffff,
    ((millis & 0xff) << 16) | (r[0] << 8) | r[1],
    (r[2] << 16) | (r[3] << 8) | r[4],
    (r[5] << 16) | (r[6] << 8) | r[7],
    (r[8] << 16) | (r[9] << 8) | r[10],
    (r[11] << 16) | (r[12] << 8) | r[13],
  ];
  let body = "";
  for (let pass = 0; pass < 7; pass++) {
    let remainder = 0;
    for (let i = 0; i < limbs.length; i++) {
      const current = remainder * 0x1000000 + limbs[i];
      const quotient = Math.floor(current / CHUNK);
      limbs[i] = quotient;
      remainder = current - quotient * CHUNK;
    }
    const d0 = Math.floor(remainder / 62 ** 3);
    const r0 = remainder - d0 * 62 ** 3;
    const d1 = Math.floor(r0 / 62 ** 2);
    const r1 = r0 - d1 * 62 ** 2;
    const d2 = Math.floor(r1 / 62);
    body = BASE62[d0] + BASE62[d1] + BASE62[d2] + BASE62[r1 - d2 * 62] + body;
  }
  // 28 digits; 62²⁷ > 2¹⁶⁰, so the extra leading one is always 0.
  return body.slice(-ID_BODY_LENGTH);
}

/** `body` + 1 in base62 (the id bodies leave headroom, so the carry never runs off the left end). */
function incrementBase62(body: string): string {
  let i = body.length - 1;
  while (i >= 0 && body[i] === "z") i--;
  if (i < 0) return body;
  return body.slice(0, i) + BASE62[BASE62.indexOf(body[i]) + 1] + "0".repeat(body.length - 1 - i);
}

/** True when `id` has the given prefix and a well-formed body. */
export function isId(id: string, prefix: string): boolean {
  return new RegExp(`^${prefix}_[0-9A-Za-z]{${ID_BODY_LENGTH}}$`).test(id);
}
