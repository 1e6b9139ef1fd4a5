/**
 * HMAC and the codecs webhook signatures come in, on WebCrypto (`crypto.subtle`, the same in workerd and Node).
 * Signatures are checked with `crypto.subtle.verify`, which compares in constant time inside the runtime: a
 * forger learns nothing from how long a wrong guess took to refuse.
 */

export type HmacHash = "SHA-1" | "SHA-256";

/** Bytes WebCrypto accepts (never a view of shared memory). */
export type Bytes = Uint8Array<ArrayBuffer>;

const encoder = new TextEncoder();

export function utf8(text: string): Bytes {
  // A fresh buffer of its own (the Workers types leave that open).
  return encoder.encode(text) as Bytes;
}

export function hmacKey(secret: Bytes, hash: HmacHash): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", secret, { name: "HMAC", hash }, false, ["sign", "verify"]);
}

/** The parts one after the other, as one buffer: what the provider signed (`t.` + body, say). */
export function concat(...parts: readonly Bytes[]): Bytes {
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.byteLength;
  }
  return joined;
}

/** Whether `signature` is the HMAC of `data` under `key`, compared in constant time. */
export function hmacMatches(key: CryptoKey, signature: Bytes, data: Bytes): Promise<boolean> {
  return crypto.subtle.verify("HMAC", key, signature, data);
}

export async function hmac(key: CryptoKey, data: Bytes): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, data));
}

export async function sha256(data: Bytes): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
}

/** Equal bytes, in time that depends on the length only (for values that are not HMACs, e.g. a body hash). */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let difference = 0;
  for (let i = 0; i < a.byteLength; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** Lower- or upper-case hex → bytes; undefined for anything else (odd length, other characters). */
export function fromHex(text: string): Bytes | undefined {
  if (!HEX.test(text)) return undefined;
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard base64 with padding → bytes; undefined for anything else. */
export function fromBase64(text: string): Bytes | undefined {
  if (!BASE64.test(text)) return undefined;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
