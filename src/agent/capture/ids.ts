/**
 * Captured-request ids: `airt_` and a ULID (26 Crockford base32 characters: 48 bits of milliseconds, then
 * 80 bits that are random for the first id of a millisecond and counted up after it), so ids sort as
 * text in the order they were made, even within one millisecond.
 */

import { randomBytes } from "node:crypto";

export const CAPTURE_ID_PREFIX = "airt_";
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const RANDOM_BITS = 80n;
const RANDOM_MAX = (1n << RANDOM_BITS) - 1n;

function encode(value: bigint, length: number): string {
  let text = "";
  for (let i = 0; i < length; i++) {
    text = ALPHABET[Number(value & 31n)] + text;
    value >>= 5n;
  }
  return text;
}

/** Makes ids that increase strictly, whatever the clock does (a clock going back reuses the last time). */
export function captureIdFactory(now: () => number = Date.now): () => string {
  let lastTime = -1;
  let lastRandom = 0n;
  return () => {
    let time = now();
    if (time <= lastTime) {
      time = lastTime;
      lastRandom = lastRandom === RANDOM_MAX ? 0n : lastRandom + 1n;
      if (lastRandom === 0n) time = ++lastTime; // 2^80 ids in one millisecond: borrow the next one
    } else {
      lastRandom = BigInt(`0x${randomBytes(10).toString("hex")}`) >> 1n; // headroom to count up
    }
    lastTime = time;
    return CAPTURE_ID_PREFIX + encode(BigInt(time), 10) + encode(lastRandom, 16);
  };
}

const ID_PATTERN = new RegExp(`^${CAPTURE_ID_PREFIX}[${ALPHABET}]{26}$`);

export function isCaptureId(value: string): boolean {
  return ID_PATTERN.test(value);
}
