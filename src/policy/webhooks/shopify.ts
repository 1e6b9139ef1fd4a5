/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>`, the HMAC-SHA256 of the body under the app's client secret.
 * No timestamp is signed.
 */

import { fromBase64, hmacKey, hmacMatches, utf8 } from "./hmac.ts";
import { signatureHeader, unverified, VERIFIED, type WebhookScheme } from "./scheme.ts";

const HEADER = "x-shopify-hmac-sha256";

export const shopify: WebhookScheme = {
  provider: "shopify",
  signsBody: true,
  async prepare(secret) {
    const key = await hmacKey(utf8(secret), "SHA-256");
    return async (request) => {
      const header = signatureHeader(request.headers, HEADER);
      if (!header.ok) return header.verdict;
      const signature = fromBase64(header.value);
      if (signature?.byteLength !== 32) return unverified(`the ${HEADER} header is not 32 bytes in base64`);
      return (await hmacMatches(key, signature, request.body)) ? VERIFIED : unverified("the signature does not match the body");
    };
  },
};
