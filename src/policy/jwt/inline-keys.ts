/**
 * Keys written into a jwt-validation policy (`jws.keys.sources.inline`): public JWKs (RSA, EC, OKP) chosen by
 * jose's key-set matching, and shared secrets (`kty: oct`, for HS256/384/512), which a JWK set in jose never
 * holds, chosen here by the same rules: the token's `kid` if it has one, the key's `alg` if it has one.
 */

import { createLocalJWKSet, errors, importJWK, type JWK, type JWTVerifyGetKey } from "jose";

/** A getter in jose's form over the inline keys; importing happens once per key and algorithm, on first use. */
export function inlineKeyGetter(keys: readonly JWK[]): JWTVerifyGetKey {
  const publicSet = createLocalJWKSet({ keys: keys.filter((key) => key.kty !== "oct") });
  const secrets = keys.filter((key) => key.kty === "oct");
  const imported = new Map<string, Promise<CryptoKey | Uint8Array>>();
  const importOnce = (index: number, alg: string) => {
    const id = `${index}/${alg}`;
    let key = imported.get(id);
    if (!key) imported.set(id, (key = importJWK(secrets[index], alg)));
    return key;
  };
  return async (header, token) => {
    const alg = header.alg ?? "";
    if (!alg.startsWith("HS")) return publicSet(header, token);
    const matching = secrets.flatMap((key, index) =>
      (header.kid === undefined || header.kid === key.kid) && (key.alg === undefined || key.alg === alg) ? [index] : [],
    );
    if (matching.length === 0) throw new errors.JWKSNoMatchingKey();
    if (matching.length === 1) return importOnce(matching[0], alg);
    // As jose's key sets do: the caller may try each candidate.
    const several = new errors.JWKSMultipleMatchingKeys();
    Object.assign(several, {
      async *[Symbol.asyncIterator]() {
        for (const index of matching) yield await importOnce(index, alg);
      },
    });
    throw several;
  };
}
