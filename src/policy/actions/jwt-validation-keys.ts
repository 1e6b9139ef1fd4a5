/**
 * The key fields of jwt-validation's config: JWKS URLs (ngrok's `additional_jkus`) and keys written inline
 * (Tollgate's `inline`), checked at load so that a key that cannot work is a located error, not a 401 later.
 */

import { z } from "zod";

/** Characters of a JWKS URL. */
export const MAX_JWKS_URL_CHARS = 2048;
/** Characters of one inline JWK's member (an RSA-8192 modulus is 1366). */
export const MAX_JWK_MEMBER_CHARS = 2048;
/** RFC 7518 §3.2: an HS256 key must be at least as long as the hash, 32 bytes (43 base64url characters). */
const MIN_HMAC_KEY_BYTES = 32;

export const jwksUrlSchema = z
  .string({ error: "must be a string" })
  .max(MAX_JWKS_URL_CHARS, `must be at most ${MAX_JWKS_URL_CHARS} characters`)
  .refine((value) => !value.includes("${"), { message: "must be written out: ${…} is not evaluated in jwt-validation's config", abort: true })
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === "https:" || url.protocol === "http:") && url.username === "" && url.password === "";
    } catch {
      return false;
    }
  }, "must be an http(s) URL without credentials")
  .describe("A URL serving the issuer's signing keys as a JWKS.");

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const member = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(MAX_JWK_MEMBER_CHARS, `must be at most ${MAX_JWK_MEMBER_CHARS} characters`);
const base64url = member.regex(BASE64URL, "must be base64url");

const REQUIRED: Record<string, readonly string[]> = { RSA: ["n", "e"], EC: ["crv", "x", "y"], OKP: ["crv", "x"], oct: ["k"] };
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth"];

export const inlineJwkSchema = z
  .looseObject({
    kty: z.enum(["RSA", "EC", "OKP", "oct"], { error: "must be RSA, EC, OKP or oct" }),
    kid: member.optional(),
    alg: member.optional(),
    use: z.literal("sig", { error: "must be 'sig'" }).optional(),
    crv: z.enum(["P-256", "P-384", "Ed25519"], { error: "must be P-256, P-384 or Ed25519" }).optional(),
    n: base64url.optional(),
    e: base64url.optional(),
    x: base64url.optional(),
    y: base64url.optional(),
    k: base64url.optional(),
  })
  .superRefine((jwk, context) => {
    const present = PRIVATE_MEMBERS.filter((name) => name in jwk);
    if (present.length > 0) context.addIssue({ code: "custom", message: `is a private key (${present.join(", ")}): give the public key only` });
    for (const name of REQUIRED[jwk.kty] ?? []) {
      if (jwk[name as keyof typeof jwk] === undefined) context.addIssue({ code: "custom", path: [name], message: `is required for a ${jwk.kty} key` });
    }
    if (jwk.kty === "oct" && jwk.k !== undefined && Math.floor((jwk.k.length * 3) / 4) < MIN_HMAC_KEY_BYTES) {
      context.addIssue({ code: "custom", path: ["k"], message: `must be at least ${MIN_HMAC_KEY_BYTES} bytes (RFC 7518 §3.2)` });
    }
  })
  .describe("A JWK: a public key (RSA, EC, OKP) or, for HS256/384/512, a shared secret (kty oct, k).");
