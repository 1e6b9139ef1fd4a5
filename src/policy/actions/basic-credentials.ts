/**
 * HTTP Basic credentials (RFC 7617) for basic-auth: reading them from `Authorization`, bounded, and checking
 * them against the allowed ones without the time taken telling anything about those. Each credential is
 * compared as the SHA-256 of its `user:password` text, every allowed one in full whatever the earlier ones
 * gave: the work is the same for every allowed credential of a given length and for any guess, so a guess
 * learns neither which part differed nor how long the right one is. Nothing here logs.
 */

/** Characters of an `Authorization` header basic-auth decodes; a longer one is refused unread. */
export const MAX_BASIC_AUTHORIZATION_CHARS = 1024;

export type PresentedCredentials =
  | { readonly presented: false }
  | { readonly presented: true; readonly username: string; readonly credential: string }
  | { readonly presented: true; readonly malformed: true };

const BASIC = /^basic +([A-Za-z0-9+/]+={0,2}) *$/i;

/** What `Authorization` carries: no Basic credentials, malformed ones, or the user name and `user:password`. */
export function presentedCredentials(authorization: string | null): PresentedCredentials {
  if (authorization === null || !/^basic(\s|$)/i.test(authorization)) return { presented: false };
  if (authorization.length > MAX_BASIC_AUTHORIZATION_CHARS) return { presented: true, malformed: true };
  const encoded = BASIC.exec(authorization)?.[1];
  if (!encoded || encoded.length % 4 !== 0) return { presented: true, malformed: true };
  let credential: string;
  try {
    const bytes = Uint8Array.from(atob(encoded), (char) => char.charCodeAt(0));
    credential = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return { presented: true, malformed: true };
  }
  const colon = credential.indexOf(":");
  if (colon < 0) return { presented: true, malformed: true };
  return { presented: true, username: credential.slice(0, colon), credential };
}

const encoder = new TextEncoder();

/** SHA-256 of `text` (UTF-8): every credential compared is 32 bytes, whatever its length. */
export async function credentialDigest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * Whether `presented` equals one of `allowed` (all digests): every byte of every allowed digest is compared,
 * with no branch on what the bytes are.
 */
export function matchesAny(presented: Uint8Array, allowed: readonly Uint8Array[]): boolean {
  let matched = 0;
  for (const digest of allowed) {
    let difference = presented.length ^ digest.length;
    for (let i = 0; i < digest.length; i++) difference |= digest[i] ^ (presented[i] ?? 0);
    matched |= Number(difference === 0);
  }
  return matched === 1;
}
