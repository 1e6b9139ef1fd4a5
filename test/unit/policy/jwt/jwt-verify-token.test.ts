/**
 * The JWT verifier of jwt-validation: RFC 7515/7519 examples, tokens signed by node:crypto (RS256, ES256,
 * HS256), and the tokens it must refuse (forged, expired, early, wrong issuer or audience, alg none,
 * algorithm confusion, oversized, too deeply nested).
 */

import type { JWK } from "jose";
import { describe, expect, it } from "vitest";
import { claimsValue, MAX_CLAIM_DEPTH } from "../../../../src/policy/jwt/claims.ts";
import { inlineKeyGetter } from "../../../../src/policy/jwt/inline-keys.ts";
import { LEEWAY_SECONDS, MAX_TOKEN_CHARS, verifyToken, type KeySource, type VerifierSettings } from "../../../../src/policy/jwt/verify-token.ts";
import { claims, newKey, signingInput, unsignedToken, type TestKey } from "../../support/jwt-signer.ts";

const NOW = 1_800_000_000;
const nowMs = NOW * 1000;

const inline = (...keys: Array<Record<string, string>>): KeySource => {
  const getKey = inlineKeyGetter(keys as JWK[]);
  return { current: async () => ({ ok: true, getKey }) };
};

const settings = (sources: KeySource[], overrides: Partial<VerifierSettings> = {}): VerifierSettings => ({
  issuers: ["https://issuer.test/"],
  audiences: ["urn:tollgate:api"],
  algorithms: ["RS256", "ES256", "HS256"],
  sources,
  ...overrides,
});

const rsa = newKey("RS256");
const ec = newKey("ES256");
const hs = newKey("HS256");
const everyKey = settings([inline(rsa.jwk, ec.jwk, hs.jwk)]);

describe("RFC 7515 and RFC 7519 examples", () => {
  // RFC 7515 A.1 (= RFC 7519 §3.1): HS256 over {"iss":"joe","exp":1300819380,"http://example.com/is_root":true}.
  const A1 =
    "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  const A1_KEY = { kty: "oct", k: "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow" };
  // RFC 7515 A.3: ES256 over the same claims, with the RFC's P-256 public key.
  const A3 =
    "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";
  const A3_KEY = { kty: "EC", crv: "P-256", x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
  const before = (1300819380 - 60) * 1000;
  const joe = (key: Record<string, string>) => settings([inline(key)], { issuers: ["joe"], audiences: undefined });

  it("verifies A.1 (HS256) before its expiry and reads its claims", async () => {
    const verdict = await verifyToken(A1, joe(A1_KEY), before);
    expect(verdict).toMatchObject({ ok: true, header: { typ: "JWT", alg: "HS256" }, payload: { iss: "joe", "http://example.com/is_root": true } });
  });

  it("verifies A.3 (ES256) with the RFC's public key", async () => {
    expect(await verifyToken(A3, joe(A3_KEY), before)).toMatchObject({ ok: true, payload: { iss: "joe", exp: 1300819380 } });
  });

  it("refuses A.1 once it expired, in 2011", async () => {
    expect(await verifyToken(A1, joe(A1_KEY), nowMs)).toEqual({ ok: false, unavailable: false, reason: "the token has expired" });
  });

  it("refuses A.1 with one changed byte of its signature", async () => {
    // The 6th character of the signature: all six of its bits are signature bits (the last character's are not).
    const at = A1.lastIndexOf(".") + 6;
    const forged = `${A1.slice(0, at)}${A1[at] === "A" ? "B" : "A"}${A1.slice(at + 1)}`;
    expect(await verifyToken(forged, joe(A1_KEY), before)).toMatchObject({ ok: false, reason: "no configured key verifies the token's signature" });
  });
});

describe("tokens signed by node:crypto", () => {
  it.each([rsa, ec, hs])("verifies %s and returns its claims", async (key: TestKey) => {
    const verdict = await verifyToken(key.sign({}, claims(NOW, { plan: "pro" })), everyKey, nowMs);
    expect(verdict).toMatchObject({ ok: true, payload: { sub: "user-1", plan: "pro" }, header: { alg: key.alg, kid: key.kid } });
  });

  it("refuses a token signed by a key that is not configured (forged)", async () => {
    const stranger = newKey("RS256", rsa.kid);
    expect(await verifyToken(stranger.sign({}, claims(NOW)), everyKey, nowMs)).toMatchObject({
      ok: false,
      unavailable: false,
      reason: "no configured key verifies the token's signature",
    });
  });

  it("refuses a token whose claims were changed after signing", async () => {
    const [header, , signature] = rsa.sign({}, claims(NOW)).split(".");
    const tampered = `${header}.${signingInput({}, claims(NOW, { sub: "admin" })).split(".")[1]}.${signature}`;
    expect(await verifyToken(tampered, everyKey, nowMs)).toMatchObject({ ok: false, reason: "no configured key verifies the token's signature" });
  });

  it(`accepts an expiry less than ${LEEWAY_SECONDS} s in the past, not ${LEEWAY_SECONDS} s`, async () => {
    const token = ec.sign({}, claims(NOW, { exp: NOW }));
    expect(await verifyToken(token, everyKey, (NOW + LEEWAY_SECONDS - 1) * 1000)).toMatchObject({ ok: true });
    expect(await verifyToken(token, everyKey, (NOW + LEEWAY_SECONDS) * 1000)).toMatchObject({ ok: false, reason: "the token has expired" });
  });

  it("refuses a token not valid yet beyond the leeway", async () => {
    const token = rsa.sign({}, claims(NOW, { nbf: NOW + LEEWAY_SECONDS + 5 }));
    expect(await verifyToken(token, everyKey, nowMs)).toMatchObject({ ok: false, reason: "the token is not valid yet (nbf)" });
  });

  it("refuses a wrong issuer, a wrong audience and a missing audience", async () => {
    expect(await verifyToken(rsa.sign({}, claims(NOW, { iss: "https://issuer.test" })), everyKey, nowMs)).toMatchObject({
      reason: "the token's issuer is not allowed",
    });
    expect(await verifyToken(rsa.sign({}, claims(NOW, { aud: ["urn:other"] })), everyKey, nowMs)).toMatchObject({
      reason: "the token's audience is not allowed",
    });
    expect(await verifyToken(rsa.sign({}, claims(NOW, { aud: undefined })), everyKey, nowMs)).toMatchObject({ reason: "the token has no audience (aud)" });
  });

  it("accepts any one allowed audience among several in aud", async () => {
    expect(await verifyToken(hs.sign({}, claims(NOW, { aud: ["urn:other", "urn:tollgate:api"] })), everyKey, nowMs)).toMatchObject({ ok: true });
  });

  it("refuses alg none, whatever the algorithms allowed", async () => {
    expect(await verifyToken(unsignedToken(claims(NOW)), everyKey, nowMs)).toEqual({
      ok: false,
      unavailable: false,
      reason: "unsigned tokens (alg none) are never accepted",
    });
  });

  it("refuses an algorithm that is not allowed, before looking for a key", async () => {
    const lookups: string[] = [];
    const counting: KeySource = {
      current: async () => {
        lookups.push("looked");
        return { ok: false, message: "unused" };
      },
    };
    const verdict = await verifyToken(ec.sign({}, claims(NOW)), settings([counting], { algorithms: ["RS256"] }), nowMs);
    expect(verdict).toMatchObject({ ok: false, unavailable: false, reason: "the token's algorithm is not allowed" });
    expect(lookups).toEqual([]);
  });

  it("refuses HS256 signed with an RSA public key as the secret (algorithm confusion)", async () => {
    const { createHmac } = await import("node:crypto");
    const input = signingInput({ alg: "HS256", kid: rsa.kid }, claims(NOW));
    const secret = JSON.stringify(rsa.jwk);
    const token = `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
    expect(await verifyToken(token, settings([inline(rsa.jwk)]), nowMs)).toMatchObject({ ok: false, unavailable: false });
  });

  it("tries every secret when several match a token without kid", async () => {
    const other = newKey("HS256");
    const { kid: _omit, ...withoutKid } = hs.jwk;
    const { kid: _omit2, ...otherWithoutKid } = other.jwk;
    const token = hs.sign({ kid: undefined }, claims(NOW));
    expect(await verifyToken(token, settings([inline(otherWithoutKid, withoutKid)]), nowMs)).toMatchObject({ ok: true });
  });

  it(`refuses a token longer than ${MAX_TOKEN_CHARS} characters and one that is not three parts`, async () => {
    const huge = rsa.sign({}, claims(NOW, { pad: "x".repeat(MAX_TOKEN_CHARS) }));
    expect(await verifyToken(huge, everyKey, nowMs)).toMatchObject({ reason: `the token is longer than ${MAX_TOKEN_CHARS} characters` });
    expect(await verifyToken("not-a-jwt", everyKey, nowMs)).toMatchObject({ reason: "the token is not a compact JWS (three base64url parts)" });
    expect(await verifyToken("e30.e30.e30.e30", everyKey, nowMs)).toMatchObject({ ok: false, unavailable: false });
  });

  it("fails closed when no key source can be read, naming why", async () => {
    const down: KeySource = { current: async () => ({ ok: false, message: "the JWKS at https://x.test/jwks could not be fetched (HTTP 500)" }) };
    expect(await verifyToken(rsa.sign({}, claims(NOW)), settings([down]), nowMs)).toEqual({
      ok: false,
      unavailable: true,
      reason: "the JWKS at https://x.test/jwks could not be fetched (HTTP 500)",
    });
  });

  it("verifies with a later source when an earlier one is down", async () => {
    const down: KeySource = { current: async () => ({ ok: false, message: "down" }) };
    expect(await verifyToken(rsa.sign({}, claims(NOW)), settings([down, inline(rsa.jwk)]), nowMs)).toMatchObject({ ok: true });
  });
});

describe("claims as CEL values", () => {
  const nested = (depth: number): Record<string, unknown> => (depth === 1 ? { leaf: 1 } : { next: nested(depth - 1) });

  it("gives integers as int, other numbers as double, objects as maps", () => {
    const value = claimsValue({ sub: "u", n: 3, ratio: 0.5, big: 2 ** 60, roles: ["a"], org: { plan: "pro" } });
    expect(value).toEqual({
      ok: true,
      value: new Map<string, unknown>([
        ["sub", "u"],
        ["n", 3n],
        ["ratio", 0.5],
        ["big", 2 ** 60],
        ["roles", ["a"]],
        ["org", new Map([["plan", "pro"]])],
      ]),
    });
  });

  it(`takes ${MAX_CLAIM_DEPTH} levels and refuses ${MAX_CLAIM_DEPTH + 1}`, () => {
    expect(claimsValue(nested(MAX_CLAIM_DEPTH)).ok).toBe(true);
    expect(claimsValue(nested(MAX_CLAIM_DEPTH + 1))).toEqual({ ok: false, message: `the token's claims nest deeper than ${MAX_CLAIM_DEPTH} levels` });
  });
});
