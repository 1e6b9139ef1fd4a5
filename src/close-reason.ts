/** WebSocket close reasons: at most 123 bytes of UTF-8 (RFC 6455 §5.5), or `close()` throws. */

export const MAX_CLOSE_REASON_BYTES = 123;

const encoder = new TextEncoder();

/** The reason as is when it fits, else cut on a character boundary and ended with "…", within 123 bytes. */
export function closeReason(reason: string): string {
  if (encoder.encode(reason).byteLength <= MAX_CLOSE_REASON_BYTES) return reason;
  const budget = MAX_CLOSE_REASON_BYTES - encoder.encode("…").byteLength;
  let bytes = 0;
  let cut = "";
  for (const character of reason) {
    bytes += encoder.encode(character).byteLength;
    if (bytes > budget) break;
    cut += character;
  }
  return `${cut}…`;
}

export function closeReasonFits(reason: string): boolean {
  return encoder.encode(reason).byteLength <= MAX_CLOSE_REASON_BYTES;
}
