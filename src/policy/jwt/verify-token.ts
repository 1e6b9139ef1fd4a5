/**
 * Verifies one compact JWT against a jwt-validation action's settings with jose: the algorithm allow list
 * (never `none`), the key sources in order (inline keys, JWKS URLs), then issuer, audience, expiry and
 * not-before with LEEWAY_SECONDS of clock skew. Answers a verdict; nothing here throws for a bad token.
 */

import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions, type ProtectedHeaderParameters } from "jose";
import type { KeySetResult } from "./remote-jwks.ts";

/** Characters of a token; real ones are under 2 KiB (an RS256 token with a dozen claims is about 1 KiB). */
export const MAX_TOKEN_CHARS = 8192;
/** Clock skew allowed on `exp` and `nbf` between the issuer and the gateway. */
export const LEEWAY_SECONDS = 30;

export interface KeySource {
  current(): Promise<KeySetResult>;
  /** A newer set for a key the current one lacks, when one may be had now (JWKS URLs only). */
  refreshedForUnknownKey?(): Promise<KeySetResult | undefined>;
}

export interface VerifierSettings {
  readonly issuers: readonly string[];
  /** Absent: `aud` is not checked (as on ngrok, where the audience allow list is optional). */
  readonly audiences?: readonly string[];
  readonly algorithms: readonly string[];
  readonly sources: readonly KeySource[];
}

export type TokenVerdict =
  | { readonly ok: true; readonly header: ProtectedHeaderParameters; readonly payload: JWTPayload; readonly signature: string }
  /** `unavailable`: no key source could be read, so the token could not be judged (fail closed). */
  | { readonly ok: false; readonly unavailable: boolean; readonly reason: string };

const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

const invalid = (reason: string): TokenVerdict => ({ ok: false, unavailable: false, reason });

type Attempt =
  | { readonly kind: "verified"; readonly payload: JWTPayload }
  | { readonly kind: "refused"; readonly reason: string }
  /** The set has no key for the token's header (kid, alg): a newer set may. */
  | { readonly kind: "no-key" }
  | { readonly kind: "bad-signature" };

export async function verifyToken(token: string, settings: VerifierSettings, nowMs: number): Promise<TokenVerdict> {
  if (token.length > MAX_TOKEN_CHARS) return invalid(`the token is longer than ${MAX_TOKEN_CHARS} characters`);
  if (!COMPACT.test(token)) return invalid("the token is not a compact JWS (three base64url parts)");
  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return invalid("the token's header is not valid JSON");
  }
  if (header.alg === "none") return invalid("unsigned tokens (alg none) are never accepted");
  if (typeof header.alg !== "string" || !settings.algorithms.includes(header.alg)) return invalid("the token's algorithm is not allowed");
  const options: JWTVerifyOptions = {
    algorithms: [...settings.algorithms],
    issuer: [...settings.issuers],
    audience: settings.audiences ? [...settings.audiences] : undefined,
    clockTolerance: LEEWAY_SECONDS,
    currentDate: new Date(nowMs),
  };
  const unavailable: string[] = [];
  for (const source of settings.sources) {
    const set = await source.current();
    if (!set.ok) {
      unavailable.push(set.message);
      continue;
    }
    let attempt = await attemptWith(token, set.getKey, options);
    if (attempt.kind === "no-key" && source.refreshedForUnknownKey) {
      const newer = await source.refreshedForUnknownKey();
      if (newer?.ok) attempt = await attemptWith(token, newer.getKey, options);
    }
    if (attempt.kind === "verified") return { ok: true, header, payload: attempt.payload, signature: token.slice(token.lastIndexOf(".") + 1) };
    if (attempt.kind === "refused") return invalid(attempt.reason);
  }
  if (unavailable.length > 0) return { ok: false, unavailable: true, reason: unavailable.join("; ") };
  return invalid("no configured key verifies the token's signature");
}

/** The token against one key set; several keys matching its header are each tried, as jose's docs advise. */
async function attemptWith(token: string, getKey: JWTVerifyGetKey, options: JWTVerifyOptions): Promise<Attempt> {
  try {
    return { kind: "verified", payload: (await jwtVerify(token, getKey, options)).payload };
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) return judged(error);
    for await (const key of error as unknown as AsyncIterable<CryptoKey>) {
      try {
        return { kind: "verified", payload: (await jwtVerify(token, key, options)).payload };
      } catch (inner) {
        const attempt = judged(inner);
        if (attempt.kind === "refused") return attempt;
      }
    }
    return { kind: "bad-signature" };
  }
}

/**
 * What a failure from jose means. A claim failure comes after the signature checked out, so it is final; a
 * signature that fails or a key that is not there sends the token on to the next source.
 */
function judged(error: unknown): Attempt {
  if (error instanceof errors.JWTExpired) return { kind: "refused", reason: "the token has expired" };
  if (error instanceof errors.JWTClaimValidationFailed) {
    const claim = error.claim;
    if (claim === "nbf") return { kind: "refused", reason: "the token is not valid yet (nbf)" };
    if (claim === "iss") return { kind: "refused", reason: error.reason === "missing" ? "the token has no issuer (iss)" : "the token's issuer is not allowed" };
    if (claim === "aud")
      return { kind: "refused", reason: error.reason === "missing" ? "the token has no audience (aud)" : "the token's audience is not allowed" };
    return { kind: "refused", reason: `the token's ${claim} claim is not valid` };
  }
  if (error instanceof errors.JWKSNoMatchingKey) return { kind: "no-key" };
  if (error instanceof errors.JWTInvalid || error instanceof errors.JWSInvalid) return { kind: "refused", reason: "the token is malformed" };
  // A signature that does not verify, or a key that cannot verify it (a private or broken JWK an issuer served,
  // a key of another type): the next source may hold the right one.
  return { kind: "bad-signature" };
}
