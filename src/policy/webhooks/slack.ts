/**
 * Slack: `X-Slack-Signature: v0=<hex>`, the HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<body>` under the
 * app's signing secret; Slack tells receivers to refuse a timestamp more than five minutes from now.
 */

import { concat, fromHex, hmacKey, hmacMatches, utf8 } from "./hmac.ts";
import { signatureHeader, timestampVerdict, unverified, VERIFIED, type WebhookScheme } from "./scheme.ts";

const SIGNATURE = "x-slack-signature";
const TIMESTAMP = "x-slack-request-timestamp";
const PREFIX = "v0=";
export const SLACK_TOLERANCE_SECONDS = 300;

export const slack: WebhookScheme = {
  provider: "slack",
  signsBody: true,
  async prepare(secret) {
    const key = await hmacKey(utf8(secret), "SHA-256");
    return async (request, nowSeconds) => {
      const header = signatureHeader(request.headers, SIGNATURE);
      if (!header.ok) return header.verdict;
      const timestamp = signatureHeader(request.headers, TIMESTAMP);
      if (!timestamp.ok) return timestamp.verdict;
      const signature = header.value.startsWith(PREFIX) ? fromHex(header.value.slice(PREFIX.length)) : undefined;
      if (signature?.byteLength !== 32) return unverified(`the ${SIGNATURE} header is not v0= and 64 hex digits`);
      const stale = timestampVerdict(timestamp.value, nowSeconds, SLACK_TOLERANCE_SECONDS, TIMESTAMP);
      if (stale) return stale;
      const signed = concat(utf8(`v0:${timestamp.value}:`), request.body);
      return (await hmacMatches(key, signature, signed)) ? VERIFIED : unverified("the signature does not match the body");
    };
  },
};
