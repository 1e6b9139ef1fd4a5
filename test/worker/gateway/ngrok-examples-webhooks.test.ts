/**
 * ngrok's documented verify-webhook examples (test/fixtures/ngrok-examples/webhooks-*.yaml) in the Worker: a
 * request signed as the provider signs it reaches the upstream with its body whole; a missing, wrong or stale
 * signature gets 403, as ngrok's verify-webhook behaviour page says. Signatures are computed here with WebCrypto
 * from each provider's published scheme.
 */

import { describe, expect, it } from "vitest";
import { ask, examplesGateway, exampleRequest as to, seenUpstream } from "./ngrok-examples-gateway.ts";

const routes = examplesGateway();
const BODY = JSON.stringify({ action: "opened", number: 7, text: "ünïcode" });

async function hmac(hash: "SHA-256" | "SHA-1", secret: string, message: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
}
const hex = (bytes: Uint8Array) => [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A POST of `body` to fixture `name` with `headers`. */
const post = (name: string, headers: Record<string, string>, body = BODY, path = "/hook") =>
  to(name, path, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });

/** Signature headers of each provider for `body`, as it documents them. */
const sign = {
  github: async (secret: string, body = BODY) => ({ "x-hub-signature-256": `sha256=${hex(await hmac("SHA-256", secret, body))}` }),
  stripe: async (secret: string, at = nowSeconds()) => ({ "stripe-signature": `t=${at},v1=${hex(await hmac("SHA-256", secret, `${at}.${BODY}`))}` }),
  slack: async (secret: string, at = nowSeconds()) => ({
    "x-slack-request-timestamp": String(at),
    "x-slack-signature": `v0=${hex(await hmac("SHA-256", secret, `v0:${at}:${BODY}`))}`,
  }),
  shopify: async (secret: string) => ({ "x-shopify-hmac-sha256": base64(await hmac("SHA-256", secret, BODY)) }),
};

describe("verify-webhook examples", () => {
  it("GitHub: signed reaches the upstream with the body whole; unsigned or wrongly signed gets 403", async () => {
    const seen = await seenUpstream(routes, post("webhooks-github", await sign.github("github-example-secret")));
    expect(seen.body).toBe(BODY);
    expect((await ask(routes, post("webhooks-github", {}))).status).toBe(403);
    expect((await ask(routes, post("webhooks-github", await sign.github("another-secret")))).status).toBe(403);
    expect((await ask(routes, post("webhooks-github", await sign.github("github-example-secret"), `${BODY} `))).status).toBe(403);
  });

  it("Stripe: signed now reaches the upstream; signed an hour ago gets 403", async () => {
    const secret = "whsec_stripe-example-secret";
    expect((await seenUpstream(routes, post("webhooks-stripe", await sign.stripe(secret)))).body).toBe(BODY);
    expect((await ask(routes, post("webhooks-stripe", await sign.stripe(secret, nowSeconds() - 3600)))).status).toBe(403);
  });

  it("Slack: signed now reaches the upstream; signed an hour ago or with another secret gets 403", async () => {
    expect((await seenUpstream(routes, post("webhooks-slack", await sign.slack("slack-example-secret")))).body).toBe(BODY);
    expect((await ask(routes, post("webhooks-slack", await sign.slack("slack-example-secret", nowSeconds() - 3600)))).status).toBe(403);
    expect((await ask(routes, post("webhooks-slack", await sign.slack("other")))).status).toBe(403);
  });

  it("Twilio: the signature over the URL and sorted form fields reaches the upstream; a changed field gets 403", async () => {
    const url = "https://webhooks-twilio.test/sms";
    const fields = { To: "+15550001111", From: "+15550002222", Body: "hello" };
    const signed = [...Object.entries(fields)].sort(([a], [b]) => (a < b ? -1 : 1)).reduce((text, [name, value]) => text + name + value, url);
    const signature = base64(await hmac("SHA-1", "twilio-example-token", signed));
    const form = (body: Record<string, string>) =>
      to("webhooks-twilio", "/sms", {
        method: "POST",
        body: new URLSearchParams(body).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
      });
    expect((await seenUpstream(routes, form(fields))).body).toBe(new URLSearchParams(fields).toString());
    expect((await ask(routes, form({ ...fields, Body: "changed" }))).status).toBe(403);
  });

  it("Shopify: signed reaches the upstream; wrongly signed gets 403", async () => {
    expect((await seenUpstream(routes, post("webhooks-shopify", await sign.shopify("shopify-example-secret")))).body).toBe(BODY);
    expect((await ask(routes, post("webhooks-shopify", await sign.shopify("other")))).status).toBe(403);
  });

  it("GitLab then a custom response: the right token is answered 200, a wrong one 403", async () => {
    const answer = await ask(routes, post("webhooks-gitlab-then-respond", { "x-gitlab-token": "secret!" }));
    expect(answer).toMatchObject({ status: 200, text: "GitLab webhook verified" });
    expect((await ask(routes, post("webhooks-gitlab-then-respond", { "x-gitlab-token": "secret?" }))).status).toBe(403);
  });

  it("enforce: false lets an unsigned request through", async () => {
    expect((await seenUpstream(routes, post("webhooks-github-not-enforced", {}))).body).toBe(BODY);
  });

  it("n8n: the webhook path needs GitHub's signature from anywhere; other paths only one address", async () => {
    const hook = "/webhook/0b7e2a4c-6d1f-4c3a-9e5b-2f8d7c6a5b41";
    const signed = to("webhooks-n8n-path-and-ips", hook, {
      method: "POST",
      body: BODY,
      clientIp: "192.0.2.1",
      headers: await sign.github("n8n-example-secret"),
    });
    expect((await seenUpstream(routes, signed)).url).toBe(hook);
    expect((await ask(routes, post("webhooks-n8n-path-and-ips", {}, BODY, hook))).status).toBe(403);
    expect((await seenUpstream(routes, to("webhooks-n8n-path-and-ips", "/editor", { clientIp: "203.0.113.7" }))).url).toBe("/editor");
    expect((await ask(routes, to("webhooks-n8n-path-and-ips", "/editor", { clientIp: "192.0.2.1" }))).status).toBe(403);
  });
});
