/**
 * Svix, which is the Standard Webhooks scheme (standardwebhooks.com) that many providers send through:
 * `svix-id`, `svix-timestamp` and `svix-signature: v1,<base64> [v1,<base64>…]` (or the same as `webhook-*`),
 * each signature the HMAC-SHA256 of `<id>.<timestamp>.<body>` under the base64 key after `whsec_`. The
 * timestamp must lie within the scheme's tolerance of five minutes.
 */

import { type Bytes, concat, fromBase64, hmacKey, hmacMatches, utf8 } from "./hmac.ts";
import { signatureHeader, timestampVerdict, unverified, VERIFIED, type WebhookScheme } from "./scheme.ts";

export const SVIX_TOLERANCE_SECONDS = 300;
const PREFIX = "whsec_";

function keyOf(secret: string): Bytes | undefined {
  const key = fromBase64(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret);
  return key && key.byteLength > 0 ? key : undefined;
}

export const svix: WebhookScheme = {
  provider: "svix",
  signsBody: true,
  checkSecret: (secret) => (keyOf(secret) ? undefined : "must be a Svix signing secret: whsec_ followed by base64"),
  async prepare(secret) {
    const key = await hmacKey(keyOf(secret) ?? new Uint8Array(32), "SHA-256");
    return async (request, nowSeconds) => {
      // Svix's own names first; the Standard Webhooks names are the same scheme.
      const family = request.headers.has("svix-signature") ? "svix" : "webhook";
      const id = signatureHeader(request.headers, `${family}-id`);
      if (!id.ok) return id.verdict;
      const timestamp = signatureHeader(request.headers, `${family}-timestamp`);
      if (!timestamp.ok) return timestamp.verdict;
      const header = signatureHeader(request.headers, `${family}-signature`);
      if (!header.ok) return header.verdict;
      const signatures = header.value
        .split(" ")
        .filter((item) => item.startsWith("v1,"))
        .map((item) => fromBase64(item.slice(3)))
        .filter((signature) => signature?.byteLength === 32) as Bytes[];
      if (signatures.length === 0) return unverified(`the ${family}-signature header has no v1, signature of 32 bytes in base64`);
      const stale = timestampVerdict(timestamp.value, nowSeconds, SVIX_TOLERANCE_SECONDS, `${family}-timestamp`);
      if (stale) return stale;
      const signed = concat(utf8(`${id.value}.${timestamp.value}.`), request.body);
      for (const signature of signatures) if (await hmacMatches(key, signature, signed)) return VERIFIED;
      return unverified("no signature matches the body");
    };
  },
};
