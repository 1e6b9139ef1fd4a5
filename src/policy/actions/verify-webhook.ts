/**
 * `verify-webhook` (as ngrok's): checks that an inbound request carries the configured provider's signature
 * under `secret`. Unverified: 403 `ERR_SVC_3204`, as ngrok answers; a body past the bound it may read answers
 * 413 with the same code. With `enforce: false` the request goes on either way and only
 * `actions.svc.verify_webhook.*` says what was found. The body is read once and sent on whole; one the isolate's
 * body budget cannot hold answers 503 with retry-after, enforced or not (src/policy/body-budget.ts).
 */

import { z } from "zod";
import { ErrorCode, ServiceError } from "../../errors.ts";
import type { Exchange } from "../exchange.ts";
import { busyResponse, RequestBody, type BodyBytes, type BodyRead } from "../request-body.ts";
import { NGROK_ONLY_PROVIDERS, webhookSchemes } from "../webhooks/providers.ts";
import type { Verdict, Verifier } from "../webhooks/scheme.ts";
import { BOOL } from "../cel-types.ts";
import { defineAction } from "./action.ts";
import { declareResults, ERROR_SHAPE, noError, type ResultError } from "./results.ts";

/** Characters of a secret: real ones are 32 to 100 (Stripe's whsec_…, Twilio's auth token, Svix keys). */
export const MAX_WEBHOOK_SECRET_CHARS = 512;

const SUPPORTED = [...webhookSchemes.keys()].join(", ");

export const verifyWebhookConfig = z
  .strictObject({
    provider: z
      .string({ error: "must be a string" })
      .superRefine((provider, context) => {
        if (webhookSchemes.has(provider)) return;
        const why = NGROK_ONLY_PROVIDERS.has(provider) ? `is one of ngrok's providers that Tollgate does not verify yet` : "is not a provider";
        context.addIssue({ code: "custom", message: `${why} ('${provider}'); Tollgate verifies ${SUPPORTED}` });
      })
      .describe(`The webhook provider, by ngrok's identifier: ${SUPPORTED}.`),
    secret: z
      .string({ error: "must be a string" })
      .min(1, "must not be empty")
      .max(MAX_WEBHOOK_SECRET_CHARS, `must be at most ${MAX_WEBHOOK_SECRET_CHARS} characters`)
      .refine((secret) => !secret.includes("${"), "must be the secret itself: ngrok's ${secrets.get(…)} vault and other interpolation are not available here")
      .describe("The signing secret (or GitLab token) the provider gave you."),
    enforce: z.boolean({ error: "must be a boolean" }).default(true).describe("false: set actions.svc.verify_webhook.* but let unverified requests through."),
  })
  .superRefine((config, context) => {
    const problem = webhookSchemes.get(config.provider)?.checkSecret?.(config.secret);
    if (problem) context.addIssue({ code: "custom", path: ["secret"], message: problem });
  });

/** Where a request without a body reader (tools, tests) reads from: no body at all. */
const NO_BODY = new RequestBody(null);

const bodyOf = (exchange: Exchange): Promise<BodyRead> => (exchange.request.body ?? NO_BODY).read();

export interface VerifyWebhookVars {
  /** The last verify-webhook found the provider's valid signature. */
  verified: boolean;
  /** Why it did not (ERR_SVC_3204 and the reason), else ''. */
  error: ResultError;
}

declare module "./results.ts" {
  interface ActionVars {
    verify_webhook: VerifyWebhookVars;
  }
}

/** `actions.svc.verify_webhook.*` (and `actions.ngrok.…`): what the last verify-webhook found, as ngrok names it. */
const verifyWebhookResults = declareResults<VerifyWebhookVars>("verify_webhook", { verified: BOOL, error: ERROR_SHAPE }, () => ({
  verified: false,
  error: noError(),
}));

export const verifyWebhookAction = defineAction({
  type: "verify-webhook",
  config: verifyWebhookConfig,
  configOptional: false,
  results: verifyWebhookResults,
  // A body past the bound it reads is refused 413.
  simulation: {
    skip: () => "verify-webhook checks a signature over the body with a timestamp against the clock: not simulated",
    check: true,
    refusedStatuses: [413],
  },
  compile(config, context) {
    if (context.phase !== "inbound") return { path: [], message: "runs only on requests (inbound, ngrok's on_http_request), as ngrok's does" };
    const scheme = webhookSchemes.get(config.provider)!;
    // Importing keys is asynchronous: once per compiled policy, on its first request.
    let verifier: Promise<Verifier> | undefined;
    const refuse = (status: number, message: string) =>
      new ServiceError(status, ErrorCode.webhookUnverified, message, { details: { action: context.position, provider: scheme.provider } }).toResponse();
    return {
      type: "verify-webhook",
      async run(exchange) {
        const vars = exchange.vars.verify_webhook;
        const fail = (status: number, message: string): Response | undefined => {
          vars.verified = false;
          vars.error = { code: `ERR_SVC_${ErrorCode.webhookUnverified}`, message };
          return config.enforce ? refuse(status, message) : undefined;
        };
        let body: BodyBytes = new Uint8Array(0);
        if (scheme.signsBody) {
          const read = await bodyOf(exchange);
          if (!read.ok && read.busy) {
            vars.verified = false;
            vars.error = { code: `ERR_SVC_${ErrorCode.webhookUnverified}`, message: read.message };
            return busyResponse(read, ErrorCode.webhookUnverified, { action: context.position, provider: scheme.provider });
          }
          if (!read.ok && read.tooLarge) return fail(413, `The request body is larger than the ${read.limit} bytes a webhook may have to be verified.`);
          if (!read.ok) return fail(400, `The webhook could not be verified: ${read.message}.`);
          body = read.bytes;
        }
        verifier ??= scheme.prepare(config.secret);
        const { method, url, headers } = exchange.request;
        const verdict: Verdict = await (await verifier)({ method, url, headers, body }, Math.floor(Date.now() / 1000));
        if (!verdict.verified) return fail(403, `The request failed ${scheme.provider} webhook verification: ${verdict.reason}.`);
        vars.verified = true;
        vars.error = { code: "", message: "" };
        return undefined;
      },
    };
  },
});
