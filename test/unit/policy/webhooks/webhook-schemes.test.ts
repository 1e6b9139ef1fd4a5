/**
 * Each provider's signing scheme as a pure function: the providers' own published vectors, vectors computed
 * here with Node's crypto (independent of the WebCrypto code under test), and hostile inputs.
 */

import { createHmac, createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { webhookSchemes } from "../../../../src/policy/webhooks/providers.ts";
import { MAX_SIGNATURE_HEADER_CHARS, type SignedRequest, type Verdict } from "../../../../src/policy/webhooks/scheme.ts";

const NOW = 1_700_000_000;

function request(headers: Record<string, string>, body: string | Uint8Array<ArrayBuffer> = "", url = "https://hooks.example.test/in"): SignedRequest {
  return { method: "POST", url: new URL(url), headers: new Headers(headers), body: typeof body === "string" ? new TextEncoder().encode(body) : body };
}

async function verify(provider: string, secret: string, signed: SignedRequest, now = NOW): Promise<Verdict> {
  const verifier = await webhookSchemes.get(provider)!.prepare(secret);
  return verifier(signed, now);
}

const hmacHex = (hash: string, key: string | Buffer, data: string | Buffer) => createHmac(hash, key).update(data).digest("hex");
const hmacBase64 = (hash: string, key: string | Buffer, data: string | Buffer) => createHmac(hash, key).update(data).digest("base64");

/** Bytes that are not UTF-8: a signature over them must cover the bytes, not a decoding of them. */
const BINARY = Uint8Array.from({ length: 512 }, (_, i) => (i * 37 + 11) % 256);

describe("github", () => {
  it('verifies GitHub\'s published vector (secret "It\'s a Secret to Everybody", body "Hello, World!")', async () => {
    const signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(await verify("github", "It's a Secret to Everybody", request({ "x-hub-signature-256": signature }, "Hello, World!"))).toEqual({ verified: true });
  });

  it("verifies a binary body signed with Node's crypto, and refuses it changed by one byte", async () => {
    const signature = `sha256=${hmacHex("sha256", "s3cret", Buffer.from(BINARY))}`;
    expect(await verify("github", "s3cret", request({ "x-hub-signature-256": signature }, BINARY))).toEqual({ verified: true });
    const tampered = BINARY.slice();
    tampered[100] ^= 1;
    expect(await verify("github", "s3cret", request({ "x-hub-signature-256": signature }, tampered))).toEqual({
      verified: false,
      reason: "the signature does not match the body",
    });
  });

  it("refuses a missing header, the wrong prefix, a short signature and non-hex", async () => {
    const good = hmacHex("sha256", "k", "{}");
    const cases: Array<[Record<string, string>, string]> = [
      [{}, "the x-hub-signature-256 header is missing"],
      [{ "x-hub-signature-256": `sha1=${good}` }, "the x-hub-signature-256 header is not sha256= and 64 hex digits"],
      [{ "x-hub-signature-256": `sha256=${good.slice(2)}` }, "the x-hub-signature-256 header is not sha256= and 64 hex digits"],
      [{ "x-hub-signature-256": `sha256=${good.slice(1)}z` }, "the x-hub-signature-256 header is not sha256= and 64 hex digits"],
    ];
    for (const [headers, reason] of cases) expect(await verify("github", "k", request(headers, "{}"))).toEqual({ verified: false, reason });
  });

  it(`refuses a signature header longer than ${MAX_SIGNATURE_HEADER_CHARS} characters without parsing it`, async () => {
    const huge = `sha256=${hmacHex("sha256", "k", "{}")}${"0".repeat(100_000)}`;
    expect(await verify("github", "k", request({ "x-hub-signature-256": huge }, "{}"))).toEqual({
      verified: false,
      reason: `the x-hub-signature-256 header is longer than ${MAX_SIGNATURE_HEADER_CHARS} characters`,
    });
  });
});

describe("stripe", () => {
  const secret = "whsec_test_secret";
  const body = '{"id":"evt_1","object":"event"}';
  const header = (t: number, ...signatures: string[]) => ({ "stripe-signature": [`t=${t}`, ...signatures.map((s) => `v1=${s}`)].join(",") });

  it("verifies t= and v1= over `<t>.<body>` within 300 seconds either way", async () => {
    for (const t of [NOW, NOW - 300, NOW + 300]) {
      const signed = request(header(t, hmacHex("sha256", secret, `${t}.${body}`)), body);
      expect(await verify("stripe", secret, signed)).toEqual({ verified: true });
    }
  });

  it("accepts any one matching v1 of several (a secret rolling over) and ignores v0", async () => {
    const t = NOW - 10;
    const old = hmacHex("sha256", "whsec_old", `${t}.${body}`);
    const current = hmacHex("sha256", secret, `${t}.${body}`);
    const signed = request({ "stripe-signature": `t=${t},v1=${old},v0=${"ab".repeat(32)},v1=${current}` }, body);
    expect(await verify("stripe", secret, signed)).toEqual({ verified: true });
  });

  it("refuses a replayed old timestamp even with a valid signature", async () => {
    const t = NOW - 301;
    const signed = request(header(t, hmacHex("sha256", secret, `${t}.${body}`)), body);
    expect(await verify("stripe", secret, signed)).toEqual({
      verified: false,
      reason: "the stripe-signature timestamp is more than 300 seconds from now (a replay, or a clock off)",
    });
  });

  it("refuses malformed headers", async () => {
    const signature = hmacHex("sha256", secret, `${NOW}.${body}`);
    const cases: Array<[string, string]> = [
      [`v1=${signature}`, "the stripe-signature header has no t="],
      [`t=${NOW}`, "the stripe-signature header has no v1= signature of 64 hex digits"],
      [`t=${NOW},v1=${signature.slice(0, 40)}`, "the stripe-signature header has no v1= signature of 64 hex digits"],
      [`t=-5,v1=${signature}`, "the stripe-signature timestamp is not a number of seconds"],
      [`t=1e9,v1=${signature}`, "the stripe-signature timestamp is not a number of seconds"],
      [",,,=,t,v1", "the stripe-signature header has no v1= signature of 64 hex digits"],
    ];
    for (const [value, reason] of cases) {
      expect(await verify("stripe", secret, request({ "stripe-signature": value }, body))).toEqual({ verified: false, reason });
    }
  });

  it("refuses a signature made with another timestamp than the one sent", async () => {
    const signed = request(header(NOW, hmacHex("sha256", secret, `${NOW - 1}.${body}`)), body);
    expect(await verify("stripe", secret, signed)).toEqual({ verified: false, reason: "no signature matches the body" });
  });
});

describe("slack", () => {
  it("verifies Slack's published example (signing secret 8f742231…, timestamp 1531420618)", async () => {
    const body =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const headers = {
      "x-slack-request-timestamp": "1531420618",
      "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
    };
    expect(await verify("slack", "8f742231b10e8888abcd99yyyzzz85a5", request(headers, body), 1531420618 + 60)).toEqual({ verified: true });
  });

  it("refuses a timestamp more than five minutes old, and a missing timestamp", async () => {
    const t = NOW - 301;
    const signature = `v0=${hmacHex("sha256", "sek", `v0:${t}:{}`)}`;
    expect(await verify("slack", "sek", request({ "x-slack-signature": signature, "x-slack-request-timestamp": String(t) }, "{}"))).toEqual({
      verified: false,
      reason: "the x-slack-request-timestamp timestamp is more than 300 seconds from now (a replay, or a clock off)",
    });
    expect(await verify("slack", "sek", request({ "x-slack-signature": signature }, "{}"))).toEqual({
      verified: false,
      reason: "the x-slack-request-timestamp header is missing",
    });
  });
});

describe("twilio", () => {
  const params = { CallSid: "CA1234567890ABCDE", Caller: "+12349013030", Digits: "1234", From: "+12349013030", To: "+18005551212" };
  const form = { "content-type": "application/x-www-form-urlencoded" };

  it("verifies Twilio's published example (auth token 12345, form parameters sorted after the URL)", async () => {
    // Written out of order on purpose: the scheme sorts them.
    const body = new URLSearchParams(Object.entries(params).reverse()).toString();
    const signed = request({ ...form, "x-twilio-signature": "0/KCTR6DLpKmkAf8muzZqo1nDgQ=" }, body, "https://mycompany.com/myapp.php?foo=1&bar=2");
    expect(await verify("twilio", "12345", signed)).toEqual({ verified: true });
  });

  it("refuses the same signature on another URL or with a parameter changed", async () => {
    const body = new URLSearchParams(params).toString();
    const otherUrl = request({ ...form, "x-twilio-signature": "0/KCTR6DLpKmkAf8muzZqo1nDgQ=" }, body, "https://mycompany.com/myapp.php?foo=1&bar=3");
    const otherDigits = request(
      { ...form, "x-twilio-signature": "0/KCTR6DLpKmkAf8muzZqo1nDgQ=" },
      body.replace("1234", "1235"),
      "https://mycompany.com/myapp.php?foo=1&bar=2",
    );
    for (const signed of [otherUrl, otherDigits]) {
      expect(await verify("twilio", "12345", signed)).toEqual({ verified: false, reason: "the signature does not match the URL and parameters" });
    }
  });

  it("verifies a JSON body through the URL's bodySHA256, and refuses a body that does not match it", async () => {
    const body = '{"event":"x"}';
    const url = `https://hooks.example.test/t?bodySHA256=${createHash("sha256").update(body).digest("hex")}`;
    const signature = hmacBase64("sha1", "tok", url);
    expect(await verify("twilio", "tok", request({ "content-type": "application/json", "x-twilio-signature": signature }, body, url))).toEqual({
      verified: true,
    });
    expect(await verify("twilio", "tok", request({ "content-type": "application/json", "x-twilio-signature": signature }, '{"event":"y"}', url))).toEqual({
      verified: false,
      reason: "the body does not match the URL's bodySHA256",
    });
  });

  it("refuses a signature that is not 20 bytes of base64", async () => {
    for (const value of ["not base64!", "AAAA", hmacBase64("sha256", "tok", "x")]) {
      expect(await verify("twilio", "tok", request({ ...form, "x-twilio-signature": value }))).toEqual({
        verified: false,
        reason: "the x-twilio-signature header is not 20 bytes in base64",
      });
    }
  });
});

describe("shopify", () => {
  it("verifies the base64 HMAC-SHA256 of a binary body, and refuses a wrong-length one", async () => {
    const signature = hmacBase64("sha256", "shpss_secret", Buffer.from(BINARY));
    expect(await verify("shopify", "shpss_secret", request({ "x-shopify-hmac-sha256": signature }, BINARY))).toEqual({ verified: true });
    expect(await verify("shopify", "shpss_secret", request({ "x-shopify-hmac-sha256": signature.slice(4) }, BINARY))).toEqual({
      verified: false,
      reason: "the x-shopify-hmac-sha256 header is not 32 bytes in base64",
    });
    expect(await verify("shopify", "other", request({ "x-shopify-hmac-sha256": signature }, BINARY))).toEqual({
      verified: false,
      reason: "the signature does not match the body",
    });
  });
});

describe("gitlab", () => {
  it("verifies the token, and refuses another token of any length", async () => {
    expect(await verify("gitlab", "secret!", request({ "x-gitlab-token": "secret!" }))).toEqual({ verified: true });
    for (const token of ["secret", "secret!!", "Secret!"]) {
      expect(await verify("gitlab", "secret!", request({ "x-gitlab-token": token }))).toEqual({
        verified: false,
        reason: "the x-gitlab-token header is not the secret",
      });
    }
  });
});

describe("svix (Standard Webhooks)", () => {
  it("verifies the Standard Webhooks specification's example", async () => {
    const headers = {
      "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "webhook-timestamp": "1614265330",
      "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    };
    const signed = request(headers, '{"test": 2432232314}');
    expect(await verify("svix", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", signed, 1614265330)).toEqual({ verified: true });
  });

  it("verifies svix-* headers with one of several signatures, and refuses a replay", async () => {
    const key = Buffer.from("0123456789abcdef0123456789abcdef");
    const secret = `whsec_${key.toString("base64")}`;
    const sign = (t: number) => hmacBase64("sha256", key, `msg_1.${t}.{}`);
    const headers = (t: number) => ({ "svix-id": "msg_1", "svix-timestamp": String(t), "svix-signature": `v1,${sign(t - 1)} v2,xyz v1,${sign(t)}` });
    expect(await verify("svix", secret, request(headers(NOW), "{}"))).toEqual({ verified: true });
    expect(await verify("svix", secret, request(headers(NOW - 600), "{}"))).toEqual({
      verified: false,
      reason: "the svix-timestamp timestamp is more than 300 seconds from now (a replay, or a clock off)",
    });
  });

  it("says at load that a secret that is not whsec_ and base64 cannot be a Svix key", () => {
    expect(webhookSchemes.get("svix")!.checkSecret?.("{your webhook secret}")).toBe("must be a Svix signing secret: whsec_ followed by base64");
    expect(webhookSchemes.get("svix")!.checkSecret?.("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")).toBeUndefined();
  });
});
