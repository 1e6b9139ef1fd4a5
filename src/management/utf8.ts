/** Strict UTF-8: decoding that refuses ill-formed bytes instead of replacing them, and says where they are. */

/**
 * `bytes` as text, or the byte offset of the first ill-formed sequence. A leading byte order mark is dropped,
 * as `Response.text()` does.
 */
export function decodeUtf8(bytes: Uint8Array): { ok: true; text: string } | { ok: false; offset: number } {
  try {
    return { ok: true, text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes) };
  } catch {
    return { ok: false, offset: firstIllFormedOffset(bytes) };
  }
}

/**
 * Offset of the first byte of the first ill-formed sequence (Unicode Table 3-7: no overlong forms, no
 * surrogates, nothing above U+10FFFF, no truncated sequence), or -1 when `bytes` is well-formed.
 */
export function firstIllFormedOffset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i];
    if (lead < 0x80) {
      i += 1;
      continue;
    }
    const [length, low, high] = sequenceOf(lead);
    if (length === 0 || i + length > bytes.length) return i;
    // The second byte's range depends on the lead byte; the others are always 80..BF.
    if (bytes[i + 1] < low || bytes[i + 1] > high) return i;
    for (let k = 2; k < length; k++) if (bytes[i + k] < 0x80 || bytes[i + k] > 0xbf) return i;
    i += length;
  }
  return -1;
}

/** Length of the sequence a lead byte starts and the allowed range of its second byte; length 0 if invalid. */
function sequenceOf(lead: number): [length: number, low: number, high: number] {
  if (lead >= 0xc2 && lead <= 0xdf) return [2, 0x80, 0xbf];
  if (lead === 0xe0) return [3, 0xa0, 0xbf];
  if (lead === 0xed) return [3, 0x80, 0x9f];
  if (lead >= 0xe1 && lead <= 0xef) return [3, 0x80, 0xbf];
  if (lead === 0xf0) return [4, 0x90, 0xbf];
  if (lead >= 0xf1 && lead <= 0xf3) return [4, 0x80, 0xbf];
  if (lead === 0xf4) return [4, 0x80, 0x8f];
  return [0, 0, 0];
}
