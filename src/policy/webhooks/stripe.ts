/**
 * Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, each v1 the HMAC-SHA256 of `<t>.<body>`
 * under the endpoint's signing secret (`whsec_…`, used as it is). Several v1 appear while a secret rolls over;
 * one match is enough. `t` must lie within Stripe's default tolerance of 300 seconds.
 */

import { type Bytes, concat, fromHex, hmacKey, hmacMatches, utf8 } from "./hmac.ts";
import { signatureHeader, timestampVerdict, unverified, VERIFIED, type WebhookScheme } from "./scheme.ts";

const HEADER = "stripe-signature";
export const STRIPE_TOLERANCE_SECONDS = 300;

export const stripe: WebhookScheme = {
  provider: "stripe",
  signsBody: true,
  async prepare(secret) {
    const key = await hmacKey(utf8(secret), "SHA-256");
    return async (request, nowSeconds) => {
      const header = signatureHeader(request.headers, HEADER);
      if (!header.ok) return header.verdict;
      let timestamp: string | undefined;
      const signatures: Bytes[] = [];
      for (const item of header.value.split(",")) {
        const [name, value = ""] = item.trim().split("=", 2);
        if (name === "t") timestamp = value;
        if (name !== "v1") continue;
        const signature = fromHex(value);
        if (signature?.byteLength === 32) signatures.push(signature);
      }
      if (timestamp === undefined) return unverified(`the ${HEADER} header has no t=`);
      if (signatures.length === 0) return unverified(`the ${HEADER} header has no v1= signature of 64 hex digits`);
      const stale = timestampVerdict(timestamp, nowSeconds, STRIPE_TOLERANCE_SECONDS, HEADER);
      if (stale) return stale;
      const signed = concat(utf8(`${timestamp}.`), request.body);
      for (const signature of signatures) if (await hmacMatches(key, signature, signed)) return VERIFIED;
      return unverified("no signature matches the body");
    };
  },
};
