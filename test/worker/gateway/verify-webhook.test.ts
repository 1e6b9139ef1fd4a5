/**
 * verify-webhook through the Worker's pipeline to a real local upstream: signed webhooks arrive byte for
 * byte, forged and unsigned ones never reach it.
 */

import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { MAX_READ_BODY_BYTES } from "../../../src/policy/request-body.ts";
import { send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;
const GITHUB_SECRET = "gh-secret";
const STRIPE_SECRET = "whsec_test";
const TWILIO_TOKEN = "twilio-token";

const routes = singleEdge(
  `      - { id: github, match: /github, upstream: ${upstream}/hooks, traffic_policy: github.yaml }
      - { id: stripe, match: /stripe, upstream: ${upstream}/hooks, traffic_policy: stripe.yaml }
      - { id: twilio, match: /twilio, upstream: ${upstream}/hooks, traffic_policy: twilio.yaml }
      - { id: lenient, match: /lenient, upstream: ${upstream}/hooks, traffic_policy: lenient.yaml }
`,
  {
    "policies/github.yaml": `on_http_request:\n  - actions:\n      - type: verify-webhook\n        config: { provider: github, secret: ${GITHUB_SECRET} }\n`,
    "policies/lenient.yaml": `on_http_request:\n  - actions:\n      - type: verify-webhook\n        config: { provider: github, secret: ${GITHUB_SECRET}, enforce: false }\n`,
    "policies/twilio.yaml": `on_http_request:\n  - actions:\n      - type: verify-webhook\n        config: { provider: twilio, secret: ${TWILIO_TOKEN} }\n`,
    "policies/stripe.yaml": `on_http_request:\n  - actions:\n      - type: verify-webhook\n        config: { provider: stripe, secret: ${STRIPE_SECRET} }\n`,
  },
);

async function hmacHex(secret: string, data: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return [...new Uint8Array(await crypto.subtle.sign("HMAC", key, data))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

async function sha256Hex(data: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Every byte value, many times over: not text, so any decoding on the way would show. */
const BINARY = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 131 + 7) % 256);

interface Seen {
  url: string;
  bodyLength: number;
  bodySha256: string;
}

describe("verify-webhook on a route", () => {
  it("sends a signed binary webhook to the upstream byte for byte", async () => {
    const response = await send(
      routes,
      new Request("http://gw.test/github/push", {
        method: "POST",
        headers: { "content-type": "application/octet-stream", "x-hub-signature-256": `sha256=${await hmacHex(GITHUB_SECRET, BINARY)}` },
        body: BINARY,
      }),
    );
    expect(response.status).toBe(200);
    const seen = (await response.json()) as Seen;
    expect(seen.url).toBe("/hooks/github/push");
    expect(seen.bodyLength).toBe(BINARY.byteLength);
    expect(seen.bodySha256).toBe(await sha256Hex(BINARY));
  });

  it("sends a signed body that arrives as a stream on whole", async () => {
    const parts = [BINARY.slice(0, 70_000), BINARY.slice(70_000)];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = parts.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    const signature = `sha256=${await hmacHex(GITHUB_SECRET, BINARY)}`;
    const response = await send(
      routes,
      new Request("http://gw.test/github/x", { method: "POST", headers: { "x-hub-signature-256": signature }, body: stream }),
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as Seen).bodySha256).toBe(await sha256Hex(BINARY));
  });

  it("answers a forged webhook 403 ERR_SVC_3204, and an unsigned one the same", async () => {
    const forged = await send(
      routes,
      new Request("http://gw.test/github/push", { method: "POST", headers: { "x-hub-signature-256": `sha256=${"0".repeat(64)}` }, body: BINARY }),
    );
    expect(forged.status).toBe(403);
    expect(await forged.json()).toMatchObject({
      error_code: "ERR_SVC_3204",
      msg: "The request failed github webhook verification: the signature does not match the body.",
    });
    const unsigned = await send(routes, new Request("http://gw.test/github/push", { method: "POST", body: "{}" }));
    expect(unsigned.status).toBe(403);
    expect(await unsigned.json()).toMatchObject({ msg: "The request failed github webhook verification: the x-hub-signature-256 header is missing." });
  });

  it("verifies Stripe's t=/v1= against the Worker's clock and refuses a replay of the same event", async () => {
    const body = new TextEncoder().encode('{"id":"evt_1"}');
    const stripeRequest = async (t: number) =>
      new Request("http://gw.test/stripe", {
        method: "POST",
        headers: { "stripe-signature": `t=${t},v1=${await hmacHex(STRIPE_SECRET, new TextEncoder().encode(`${t}.{"id":"evt_1"}`))}` },
        body,
      });
    const now = Math.floor(Date.now() / 1000);
    const fresh = await send(routes, await stripeRequest(now));
    expect(fresh.status).toBe(200);
    expect(((await fresh.json()) as Seen).bodySha256).toBe(await sha256Hex(body));
    const replayed = await send(routes, await stripeRequest(now - 3600));
    expect(replayed.status).toBe(403);
    expect(((await replayed.json()) as { msg: string }).msg).toContain("more than 300 seconds from now");
  });

  it("verifies a bodiless GET that Twilio signs by its URL, and sends it on", async () => {
    const url = "http://gw.test/twilio/status?CallSid=CA1&CallStatus=completed";
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(TWILIO_TOKEN), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
    const signature = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(url)))));
    const response = await send(routes, new Request(url, { headers: { "x-twilio-signature": signature } }));
    expect(response.status).toBe(200);
    expect(((await response.json()) as Seen).url).toBe("/hooks/twilio/status?CallSid=CA1&CallStatus=completed");
    const forged = await send(routes, new Request(`${url}&CallStatus=failed`, { headers: { "x-twilio-signature": signature } }));
    expect(forged.status).toBe(403);
  });

  it(`answers 413 for a body past ${MAX_READ_BODY_BYTES} bytes, before reading it when its length is declared`, async () => {
    const big = new Uint8Array(MAX_READ_BODY_BYTES + 1);
    const response = await send(
      routes,
      new Request("http://gw.test/github/big", {
        method: "POST",
        headers: { "x-hub-signature-256": `sha256=${await hmacHex(GITHUB_SECRET, big)}` },
        body: big,
      }),
    );
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_3204" });
  });

  it("with enforce: false sends a streamed body past the bound on whole: the part read, then the rest", async () => {
    const chunk = BINARY.slice(0, 64 * 1024);
    const chunks = Math.ceil((MAX_READ_BODY_BYTES * 1.5) / chunk.byteLength);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < chunks) controller.enqueue(chunk.slice());
        else controller.close();
      },
    });
    const whole = new Uint8Array(chunks * chunk.byteLength);
    for (let i = 0; i < chunks; i++) whole.set(chunk, i * chunk.byteLength);
    const response = await send(routes, new Request("http://gw.test/lenient", { method: "POST", body: stream }));
    expect(response.status).toBe(200);
    const seen = (await response.json()) as Seen;
    expect(seen.bodyLength).toBe(whole.byteLength);
    expect(seen.bodySha256).toBe(await sha256Hex(whole));
  });

  it("with enforce: false lets a policy answer unverified webhooks itself, and sends verified ones on", async () => {
    const routes = singleEdge(`      - { id: shadow, match: /shadow, upstream: ${upstream}/hooks, traffic_policy: shadow.yaml }\n`, {
      // ngrok's "enforce: false" pattern: verify, then answer with a custom response of one's own.
      "policies/shadow.yaml": [
        "on_http_request:",
        "  - actions:",
        "      - type: verify-webhook",
        `        config: { provider: github, secret: ${GITHUB_SECRET}, enforce: false }`,
        "  - expressions: ['!actions.ngrok.verify_webhook.verified']",
        "    actions:",
        "      - type: custom-response",
        "        config: { status_code: 401, body: not signed }",
        "",
      ].join("\n"),
    });
    const refused = await send(routes, new Request("http://gw.test/shadow", { method: "POST", body: "{}" }));
    expect(refused.status).toBe(401);
    expect(await refused.text()).toBe("not signed");
    const body = new TextEncoder().encode("{}");
    const passed = await send(
      routes,
      new Request("http://gw.test/shadow", { method: "POST", headers: { "x-hub-signature-256": `sha256=${await hmacHex(GITHUB_SECRET, body)}` }, body }),
    );
    expect(passed.status).toBe(200);
    expect(((await passed.json()) as Seen).bodyLength).toBe(2);
  });
});
