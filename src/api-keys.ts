/**
 * TOLLGATE_API_KEYS, the accounts' key hashes: parsed by src/settings.ts with the other variables, read by the
 * management API's and the tunnels' authentication (src/management/auth.ts).
 */

/** The configuration variable (a secret when deployed) that holds the accounts' key hashes. */
export const API_KEYS_VAR = "TOLLGATE_API_KEYS";

/** An account id: `acct_` and 1 to 64 letters, digits, `_` or `-`. */
export const ACCOUNT_ID = /^acct_[A-Za-z0-9_-]{1,64}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

export interface ApiKeyEntry {
  readonly accountId: string;
  readonly hash: Uint8Array;
}

export type ApiKeysConfig = { ok: true; entries: readonly ApiKeyEntry[] } | { ok: false; problem: string };

/**
 * Parses `TOLLGATE_API_KEYS`: entries `<account_id>:<sha256 hex of the key>` separated by commas, spaces
 * or new lines. An account may have several keys. Unset or empty means no key is accepted.
 */
export function parseApiKeys(value: string | undefined): ApiKeysConfig {
  const entries: ApiKeyEntry[] = [];
  const items = (value ?? "").split(/[\s,]+/).filter((item) => item !== "");
  for (const [index, item] of items.entries()) {
    const separator = item.lastIndexOf(":");
    const accountId = item.slice(0, separator);
    const hex = item.slice(separator + 1).toLowerCase();
    if (separator < 0 || !ACCOUNT_ID.test(accountId)) {
      return { ok: false, problem: `entry ${index + 1} must start with an account id 'acct_…' followed by ':'` };
    }
    if (!SHA256_HEX.test(hex)) {
      return { ok: false, problem: `entry ${index + 1} (account ${accountId}) must end with 64 hex digits, the SHA-256 of the key` };
    }
    entries.push({ accountId, hash: hexToBytes(hex) });
  }
  return { ok: true, entries };
}

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}
