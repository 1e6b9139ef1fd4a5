/**
 * GitLab: no signature, the secret token itself in `X-Gitlab-Token`. It is compared in constant time as HMACs
 * under the token (equal HMACs, equal tokens), so neither its content nor its length leaks through timing.
 */

import { hmac, hmacKey, hmacMatches, utf8 } from "./hmac.ts";
import { signatureHeader, unverified, VERIFIED, type WebhookScheme } from "./scheme.ts";

const HEADER = "x-gitlab-token";

export const gitlab: WebhookScheme = {
  provider: "gitlab",
  signsBody: false,
  async prepare(secret) {
    const key = await hmacKey(utf8(secret), "SHA-256");
    const expected = await hmac(key, utf8(secret));
    return async (request) => {
      const header = signatureHeader(request.headers, HEADER);
      if (!header.ok) return header.verdict;
      return (await hmacMatches(key, expected, utf8(header.value))) ? VERIFIED : unverified(`the ${HEADER} header is not the secret`);
    };
  },
};
