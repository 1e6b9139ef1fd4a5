/**
 * Twilio: `X-Twilio-Signature: <base64>`, the HMAC-SHA1 under the account's auth token of the full URL Twilio
 * requested followed, for a form POST, by every parameter's name and value sorted by name (case-sensitive).
 * A JSON body is covered instead by the URL's `bodySHA256` parameter, the hex SHA-256 of the body, which
 * must match it. Twilio signs no timestamp.
 */

import { constantTimeEqual, fromBase64, fromHex, hmacKey, hmacMatches, sha256, utf8 } from "./hmac.ts";
import { signatureHeader, unverified, VERIFIED, type SignedRequest, type Verdict, type WebhookScheme } from "./scheme.ts";

const HEADER = "x-twilio-signature";
const FORM = "application/x-www-form-urlencoded";

/** What Twilio signed: the URL, then each form parameter as name + value, in name (then value) order. */
export function twilioSignedText(url: string, params: Iterable<[string, string]>): string {
  const sorted = [...params].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  let text = url;
  for (const [name, value] of sorted) text += name + value;
  return text;
}

function isForm(headers: Headers): boolean {
  return (headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase() === FORM;
}

/** A non-form body must be the one the URL's bodySHA256 names; undefined when it is (or there is none). */
async function bodyHashVerdict(request: SignedRequest): Promise<Verdict | undefined> {
  const named = request.url.searchParams.get("bodySHA256");
  if (named === null) return request.body.byteLength === 0 ? undefined : unverified("a body that is not a form needs bodySHA256 in the URL");
  const expected = fromHex(named);
  if (expected?.byteLength !== 32 || !constantTimeEqual(expected, await sha256(request.body))) {
    return unverified("the body does not match the URL's bodySHA256");
  }
  return undefined;
}

export const twilio: WebhookScheme = {
  provider: "twilio",
  signsBody: true,
  async prepare(secret) {
    const key = await hmacKey(utf8(secret), "SHA-1");
    return async (request) => {
      const header = signatureHeader(request.headers, HEADER);
      if (!header.ok) return header.verdict;
      const signature = fromBase64(header.value);
      if (signature?.byteLength !== 20) return unverified(`the ${HEADER} header is not 20 bytes in base64`);
      let params: Iterable<[string, string]> = [];
      if (isForm(request.headers)) params = new URLSearchParams(new TextDecoder().decode(request.body));
      else {
        const mismatch = await bodyHashVerdict(request);
        if (mismatch) return mismatch;
      }
      const signed = utf8(twilioSignedText(request.url.href, params));
      return (await hmacMatches(key, signature, signed)) ? VERIFIED : unverified("the signature does not match the URL and parameters");
    };
  },
};
