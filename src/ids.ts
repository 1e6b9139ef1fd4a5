/** Resource ids: a prefix plus 27 base62 characters that sort by creation time. */

export const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ID_BODY_LENGTH = 27;
const RANDOM_BYTES = 14;

let lastMillis = 0;
let lastBody = "";

/**
 * 20 bytes (48-bit millisecond time, 112 random bits) in base62, left-padded to 27 characters,
 * so string order is creation order. Within one millisecond the number is incremented instead,
 * keeping ids made by one isolate strictly increasing (and cheap: a flood's 429s each carry one).
 */
export function newId(prefix: string, now: number = Date.now()): string {
  if (now <= lastMillis) {
    lastBody = incrementBase62(lastBody);
  } else {
    const random = crypto.getRandomValues(new Uint8Array(RANDOM_BYTES));
    random[0] &= 0x7f; // headroom so increments never overflow into the time part
    lastMillis = now;
    lastBody = encodeBase62(now, random);
  }
  return `${prefix}_${lastBody}`;
}

/** The 160-bit number (time << 112 | random) in base62, 27 digits, by long division over 16-bit limbs. */
export function encodeBase62(millis: number, random: Uint8Array): string {
  const limbs = new Array<number>(3 + RANDOM_BYTES / 2);
  limbs[0] = Math.floor(millis / 2 ** 32) & 0xffff;
  limbs[1] = Math.floor(millis / 2 ** 16) & 0xffff;
  limbs[2] = millis & 0xffff;
  for (let i = 0; i < RANDOM_BYTES / 2; i++) limbs[3 + i] = (random[2 * i] << 8) | random[2 * i + 1];
  const digits = new Array<string>(ID_BODY_LENGTH);
  for (let d = ID_BODY_LENGTH - 1; d >= 0; d--) {
    let remainder = 0;
    for (let i = 0; i < limbs.length; i++) {
      const current = remainder * 0x10000 + limbs[i];
      limbs[i] = Math.floor(current / 62);
      remainder = current % 62;
    }
    digits[d] = BASE62[remainder];
  }
  return digits.join("");
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
