/** Tunnel group backends are shared by tunnels with the same labels, so their id is derived from them. */

import { BASE62 } from "../ids.ts";

/** `bkdtg_` + 27 base62 characters of the SHA-256 of the account and its sorted labels. */
export async function backendId(accountId: string, labels: Readonly<Record<string, string>>): Promise<string> {
  const canonical = JSON.stringify([accountId, Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical)));
  let value = 0n;
  for (const byte of digest.subarray(0, 20)) value = (value << 8n) | BigInt(byte);
  let body = "";
  while (value > 0n) {
    body = BASE62[Number(value % 62n)] + body;
    value /= 62n;
  }
  return `bkdtg_${body.padStart(27, "0").slice(-27)}`;
}
