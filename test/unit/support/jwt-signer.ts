/**
 * Tokens for jwt-validation tests, signed with node:crypto alone (base64url by hand, crypto.sign/createHmac),
 * so that nothing of the verifier's code path, jose included, makes the tokens it then checks.
 */

import { createHmac, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";

export type Alg = "RS256" | "ES256" | "HS256";

export interface TestKey {
  readonly alg: Alg;
  readonly kid: string;
  /** What a JWKS or an inline key list holds: the public key, or the oct secret for HS256. */
  readonly jwk: Record<string, string>;
  sign(header: Record<string, unknown>, payload: Record<string, unknown>): string;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString("base64url");

export function signingInput(header: Record<string, unknown>, payload: Record<string, unknown>): string {
  return `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
}

function asymmetric(alg: "RS256" | "ES256", kid: string, privateKey: KeyObject, publicKey: KeyObject): TestKey {
  const jwk = { ...(publicKey.export({ format: "jwk" }) as Record<string, string>), kid, alg, use: "sig" };
  return {
    alg,
    kid,
    jwk,
    sign(header, payload) {
      const input = signingInput({ alg, kid, typ: "JWT", ...header }, payload);
      const signature = sign("sha256", Buffer.from(input), alg === "ES256" ? { key: privateKey, dsaEncoding: "ieee-p1363" } : privateKey);
      return `${input}.${b64url(signature)}`;
    },
  };
}

export function newKey(alg: Alg, kid = `${alg.toLowerCase()}-${randomBytes(4).toString("hex")}`): TestKey {
  if (alg === "RS256") {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    return asymmetric(alg, kid, privateKey, publicKey);
  }
  if (alg === "ES256") {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    return asymmetric(alg, kid, privateKey, publicKey);
  }
  const secret = randomBytes(32);
  return {
    alg,
    kid,
    jwk: { kty: "oct", k: b64url(secret), kid, alg },
    sign(header, payload) {
      const input = signingInput({ alg, kid, typ: "JWT", ...header }, payload);
      return `${input}.${b64url(createHmac("sha256", secret).update(input).digest())}`;
    },
  };
}

/** `alg: none` with an empty signature: what an attacker sends hoping the verifier skips the check. */
export function unsignedToken(payload: Record<string, unknown>): string {
  return `${signingInput({ alg: "none", typ: "JWT" }, payload)}.`;
}

/** Claims valid for an hour from `nowSeconds` for the given issuer and audience. */
export function claims(nowSeconds: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { iss: "https://issuer.test/", aud: "urn:tollgate:api", sub: "user-1", iat: nowSeconds, exp: nowSeconds + 3600, ...extra };
}
