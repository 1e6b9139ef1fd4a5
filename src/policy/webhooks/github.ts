/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the body under the webhook's secret.
 * GitHub signs no timestamp, so nothing bounds a replay (its `X-GitHub-Delivery` id is for the receiver).
 */

import { fromHex, hmacKey, hmacMatches, utf8 } from "./hmac.ts";
import { signatureHeader, unverified, VERIFIED, type WebhookScheme } from "./scheme.ts";

const HEADER = "x-hub-signature-256";
const PREFIX = "sha256=";

export const github: WebhookScheme = {
  provider: "github",
  signsBody: true,
  async prepare(secret) {
    const key = await hmacKey(utf8(secret), "SHA-256");
    return async (request) => {
      const header = signatureHeader(request.headers, HEADER);
      if (!header.ok) return header.verdict;
      const signature = header.value.startsWith(PREFIX) ? fromHex(header.value.slice(PREFIX.length)) : undefined;
      if (signature?.byteLength !== 32) return unverified(`the ${HEADER} header is not sha256= and 64 hex digits`);
      return (await hmacMatches(key, signature, request.body)) ? VERIFIED : unverified("the signature does not match the body");
    };
  },
};
