/**
 * What a webhook provider's signing scheme is to `verify-webhook`: one file per provider implements it as a
 * pure function of the request, the secret and the time (the clock is an argument, never read here).
 */

import type { Bytes } from "./hmac.ts";

/** The request as a scheme checks it: the body is the bytes the upstream will receive. */
export interface SignedRequest {
  readonly method: string;
  /** The URL the provider sent the request to (Twilio signs it). */
  readonly url: URL;
  readonly headers: Headers;
  readonly body: Bytes;
}

export type Verdict = { readonly verified: true } | { readonly verified: false; readonly reason: string };

/** Checks one request against the secret it was prepared with; `nowSeconds`: Unix time of the check. */
export type Verifier = (request: SignedRequest, nowSeconds: number) => Promise<Verdict>;

export interface WebhookScheme {
  /** The provider identifier, as ngrok names it (`github`, `stripe`, …). */
  readonly provider: string;
  /** Whether the signature covers the body (GitLab's token does not, so the body is not read for it). */
  readonly signsBody: boolean;
  /** Why `secret` cannot be one of this provider's, when that is visible at load. */
  checkSecret?(secret: string): string | undefined;
  /** Turns the secret into what `verify` needs (imported keys), once per compiled action. */
  prepare(secret: string): Promise<Verifier>;
}

/**
 * Characters of one signature or timestamp header a scheme reads. The longest real one is Stripe's during a
 * secret rotation (a timestamp and a few 64-character signatures); anything longer is refused unparsed.
 */
export const MAX_SIGNATURE_HEADER_CHARS = 2048;

/** What a scheme gets for a header: its value, or the reason the request is unverified without it. */
export type HeaderRead = { readonly ok: true; readonly value: string } | { readonly ok: false; readonly verdict: Verdict };

export const unverified = (reason: string): Verdict => ({ verified: false, reason });
export const VERIFIED: Verdict = { verified: true };

/** The value of header `name`, present and at most MAX_SIGNATURE_HEADER_CHARS long. */
export function signatureHeader(headers: Headers, name: string): HeaderRead {
  const value = headers.get(name);
  if (value === null || value === "") return { ok: false, verdict: unverified(`the ${name} header is missing`) };
  if (value.length > MAX_SIGNATURE_HEADER_CHARS) {
    return { ok: false, verdict: unverified(`the ${name} header is longer than ${MAX_SIGNATURE_HEADER_CHARS} characters`) };
  }
  return { ok: true, value };
}

const UNIX_SECONDS = /^\d{1,12}$/;

/**
 * A signed timestamp (Unix seconds, as text) within `toleranceSeconds` of now, either way: an old one is a
 * replay, one from the future a clock that cannot be trusted with the window.
 */
export function timestampVerdict(text: string, nowSeconds: number, toleranceSeconds: number, header: string): Verdict | undefined {
  if (!UNIX_SECONDS.test(text)) return unverified(`the ${header} timestamp is not a number of seconds`);
  if (Math.abs(nowSeconds - Number(text)) > toleranceSeconds) {
    return unverified(`the ${header} timestamp is more than ${toleranceSeconds} seconds from now (a replay, or a clock off)`);
  }
  return undefined;
}
