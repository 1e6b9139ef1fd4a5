/** The `verify-webhook` action and the request body it reads: answers, result variables, bounds, config errors. */

import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MAX_WEBHOOK_SECRET_CHARS, verifyWebhookAction, verifyWebhookConfig } from "../../../../src/policy/actions/verify-webhook.ts";
import { expressionCompiler } from "../../../../src/policy/cel.ts";
import type { ActionServices, Exchange } from "../../../../src/policy/exchange.ts";
import { MAX_READ_BODY_BYTES, RequestBody } from "../../../../src/policy/request-body.ts";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load, problems } from "../../support/policy-text.ts";
import { compiledStep } from "../../support/compiled-step.ts";

const services: ActionServices = { counter: new MemoryCounter(0) };
const SECRET = "It's a Secret to Everybody";

function streamOf(...chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    pull(controller) {
      const next = chunks.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}

async function bytesOf(body: Uint8Array | ReadableStream<Uint8Array> | null | undefined): Promise<Uint8Array> {
  if (body instanceof Uint8Array) return body;
  return new Uint8Array(await new Response(body).arrayBuffer());
}

function exchangeWith(body: RequestBody, headers: Record<string, string> = {}): Exchange {
  const base = makeExchange({ method: "POST", url: "https://hooks.example.test/github", headers });
  return { ...base, request: { ...base.request, body } };
}

const signed = (body: Uint8Array) => ({ "x-hub-signature-256": `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}` });

const action = (config: Record<string, unknown>, phase: "inbound" | "outbound" = "inbound") =>
  compiledStep(verifyWebhookAction.compile(verifyWebhookConfig.parse(config), { phase, position: "inbound[0].actions[0]", expressions: expressionCompiler() }));

describe("RequestBody", () => {
  it("reads once: every caller gets the same bytes, and they are what is sent on", async () => {
    const body = new RequestBody(streamOf(new Uint8Array([1, 2]), new Uint8Array([0xff, 0])));
    const [first, second] = await Promise.all([body.read(), body.read()]);
    expect(first).toEqual({ ok: true, bytes: new Uint8Array([1, 2, 0xff, 0]) });
    expect(second).toBe(first);
    expect(await bytesOf(body.forwardBody())).toEqual(new Uint8Array([1, 2, 0xff, 0]));
  });

  it("sends the original on untouched when nothing read it", () => {
    expect(new RequestBody(streamOf(new Uint8Array([1]))).forwardBody()).toBeUndefined();
  });

  it("does not read a body whose content-length is past the bound, and leaves it to be sent on", async () => {
    const body = new RequestBody(streamOf(new Uint8Array(8)), String(MAX_READ_BODY_BYTES + 1));
    expect(await body.read()).toEqual({ ok: false, tooLarge: true, limit: MAX_READ_BODY_BYTES });
    expect(body.forwardBody()).toBeUndefined();
  });

  it("stops reading past the bound and sends on the part read followed by the rest, byte for byte", async () => {
    const chunks = Array.from({ length: 10 }, (_, i) => Uint8Array.from({ length: 100 }, (_, j) => (i * 100 + j) % 251));
    const whole = await bytesOf(streamOf(...chunks.map((chunk) => chunk.slice())));
    const body = new RequestBody(streamOf(...chunks), null, 250);
    expect(await body.read()).toEqual({ ok: false, tooLarge: true, limit: 250 });
    expect(await bytesOf(body.forwardBody())).toEqual(whole);
  });

  it("reads no body as empty", async () => {
    const body = new RequestBody(null);
    expect(await body.read()).toEqual({ ok: true, bytes: new Uint8Array(0) });
    expect(body.forwardBody()).toBeNull();
  });
});

const payload = new TextEncoder().encode('{"zen":"Keep it logically awesome."}');

describe("verify-webhook", () => {
  it("lets a signed request through with actions.svc.verify_webhook.verified true", async () => {
    const exchange = exchangeWith(new RequestBody(streamOf(payload.slice())), signed(payload));
    expect(await action({ provider: "github", secret: SECRET }).run(exchange, services)).toBeUndefined();
    expect(exchange.vars.verify_webhook).toEqual({ verified: true, error: { code: "", message: "" } });
  });

  it("answers a forged request 403 ERR_SVC_3204, as ngrok answers ERR_NGROK_3204", async () => {
    const exchange = exchangeWith(new RequestBody(streamOf(payload.slice())), signed(new TextEncoder().encode("other")));
    const response = (await action({ provider: "github", secret: SECRET }).run(exchange, services)) as Response;
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_3204",
      msg: "The request failed github webhook verification: the signature does not match the body.",
      details: { action: "inbound[0].actions[0]", provider: "github" },
    });
    expect(exchange.vars.verify_webhook.verified).toBe(false);
  });

  it("with enforce: false lets an unsigned request on, and says why in the error variables", async () => {
    const exchange = exchangeWith(new RequestBody(streamOf(payload.slice())));
    expect(await action({ provider: "github", secret: SECRET, enforce: false }).run(exchange, services)).toBeUndefined();
    expect(exchange.vars.verify_webhook).toEqual({
      verified: false,
      error: { code: "ERR_SVC_3204", message: "The request failed github webhook verification: the x-hub-signature-256 header is missing." },
    });
  });

  it(`answers 413 for a body past ${MAX_READ_BODY_BYTES} bytes, however it is signed`, async () => {
    const big = new Uint8Array(MAX_READ_BODY_BYTES + 1);
    const exchange = exchangeWith(new RequestBody(streamOf(big)), signed(big));
    const response = (await action({ provider: "github", secret: SECRET }).run(exchange, services)) as Response;
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_3204",
      msg: `The request body is larger than the ${MAX_READ_BODY_BYTES} bytes a webhook may have to be verified.`,
    });
  });

  it("does not read the body for GitLab, whose token signs nothing", async () => {
    const body = new RequestBody(streamOf(payload.slice()));
    const exchange = exchangeWith(body, { "x-gitlab-token": "secret!" });
    expect(await action({ provider: "gitlab", secret: "secret!" }).run(exchange, services)).toBeUndefined();
    expect(body.forwardBody()).toBeUndefined();
  });

  it("refuses to run outbound, where ngrok does not run it either", () => {
    expect(
      verifyWebhookAction.compile(verifyWebhookConfig.parse({ provider: "github", secret: "s" }), {
        phase: "outbound",
        position: "outbound[0].actions[0]",
        expressions: expressionCompiler(),
      }),
    ).toEqual({
      path: [],
      message: "runs only on requests (inbound, ngrok's on_http_request), as ngrok's does",
    });
  });
});

describe("verify-webhook config", () => {
  const messages = (config: unknown) => verifyWebhookConfig.safeParse(config).error?.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);

  it("names the providers it verifies for an unknown one, and says when ngrok has it", () => {
    expect(messages({ provider: "zoom", secret: "s" })).toEqual([
      "provider: is one of ngrok's providers that Tollgate does not verify yet ('zoom'); Tollgate verifies github, gitlab, shopify, slack, stripe, svix, twilio",
    ]);
    expect(messages({ provider: "GitHub", secret: "s" })).toEqual([
      "provider: is not a provider ('GitHub'); Tollgate verifies github, gitlab, shopify, slack, stripe, svix, twilio",
    ]);
  });

  it(`refuses a secret that is empty, longer than ${MAX_WEBHOOK_SECRET_CHARS} characters, or interpolated`, () => {
    expect(messages({ provider: "stripe", secret: "" })).toEqual(["secret: must not be empty"]);
    expect(messages({ provider: "stripe", secret: "x".repeat(MAX_WEBHOOK_SECRET_CHARS + 1) })).toEqual([
      `secret: must be at most ${MAX_WEBHOOK_SECRET_CHARS} characters`,
    ]);
    expect(messages({ provider: "stripe", secret: "${secrets.get('webhook-secrets', 'stripe-secret')}" })).toEqual([
      "secret: must be the secret itself: ngrok's ${secrets.get(…)} vault and other interpolation are not available here",
    ]);
  });

  it("refuses a Svix secret that is not whsec_ and base64, at its path", () => {
    expect(messages({ provider: "svix", secret: "{your webhook secret}" })).toEqual(["secret: must be a Svix signing secret: whsec_ followed by base64"]);
  });
});

describe("verify-webhook result variables in expressions", () => {
  const policy = (expression: string) =>
    lines(
      "on_http_request:",
      "  - actions:",
      "      - type: verify-webhook",
      `        config: { provider: github, secret: "${SECRET}", enforce: false }`,
      `  - expressions: ["${expression}"]`,
      "    actions:",
      "      - type: custom-response",
      "        config: { status_code: 401, body: unverified }",
    );

  it("reads verified and the error as actions.svc.verify_webhook.* and ngrok's actions.ngrok.verify_webhook.*", async () => {
    for (const expression of ["!actions.svc.verify_webhook.verified", "actions.ngrok.verify_webhook.error.code == 'ERR_SVC_3204'"]) {
      const compiled = load(policy(expression));
      const unsigned = (await runPhase(compiled.inbound, exchangeWith(new RequestBody(streamOf(payload.slice()))), services)) as Response;
      expect(unsigned.status).toBe(401);
      expect(await runPhase(compiled.inbound, exchangeWith(new RequestBody(streamOf(payload.slice())), signed(payload)), services)).toBeUndefined();
    }
  });

  it("refuses a type error on them at load", () => {
    expect(problems(policy("actions.svc.verify_webhook.verified == 'yes'"))).toEqual([
      expect.stringMatching(/^policies\/api\.yaml:5: on_http_request\[1\]\.expressions\[0\]: invalid CEL: .*bool.*string/),
    ]);
  });
});
